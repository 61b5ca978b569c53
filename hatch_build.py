"""Hatch build hook: compile slateboard's hot paths with mypyc when a wheel is built.

The modules are ``slateboard._native.COMPILED``, compiled as one mypyc group (as black does with
hatch-mypyc, but with our group, our mypy config and a pure fallback). The wheel then holds the
extension modules next to the sources, and gets a platform tag. A pure (``py3-none-any``) wheel
is built instead:

- when ``SLATEBOARD_BUILD_PURE=1`` asks for one;
- when no C compiler is found (``$CC``, else ``cc``/``gcc``/``clang`` on ``PATH``);
- when the native step fails for any reason (type check, C compiler, linker): one warning line
  says why, and the wheel is the pure one. A build never fails for its native part.

The type check mypyc runs happens in pip's isolated build environment, which holds the base
dependencies and none of the optional extras (psycopg, the OpenTelemetry SDK, ...). So it runs
under a build-only mypy configuration (``build_mypy_config``): the project's settings, missing
imports taken as ``Any``, and errors reported only in the modules it compiles (the other modules
are analysed for their types; ``mypy`` in CI checks them with every extra installed).

Editable installs and the sdist are never compiled: the working tree is always pure Python.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import json
import os
import shutil
import tempfile
import tomllib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

PURE_ENV = "SLATEBOARD_BUILD_PURE"
ROOT = Path(__file__).resolve().parent
SRC = ROOT / "src"


def _c_compiler() -> str | None:
    wanted = os.environ.get("CC", "").split()
    for name in wanted[:1] or ["cc", "gcc", "clang"]:
        found = shutil.which(name)
        if found:
            return found
    return None


def _native_module() -> Any:
    """``slateboard._native`` loaded from its file alone (the package's dependencies may be absent)."""
    spec = importlib.util.spec_from_file_location("_slateboard_native_build", SRC / "slateboard" / "_native.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def class_docs(source: str) -> dict[str, str]:
    """The docstrings of a module's top-level classes, by class name (mypyc drops them)."""
    docs: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                docs[node.name] = doc
    return docs


def compile_mode() -> str:
    """``compiled``, or ``pure`` and why (``SLATEBOARD_BUILD_PURE=1`` or no C compiler)."""
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return f"pure ({PURE_ENV})"
    if _c_compiler() is None:
        return "pure (no C compiler)"
    return "compiled"


def _ini_value(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def build_mypy_config(pyproject: Path, compiled: Sequence[str]) -> str:
    """The mypy configuration (INI text) for the type check mypyc runs in the isolated build.

    It is the project's ``[tool.mypy]`` (strict, the pydantic plugin, the overrides) with three
    changes, so that the optional extras being absent never fails the build: imports that cannot
    be found are ``Any`` (``ignore_missing_imports``), an ignore comment such a missing import
    leaves unused is no error, and errors count only in ``compiled`` (the other modules are
    analysed for their types but not reported)."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {}).get("mypy", {})
    lines = ["[mypy]"]
    for key, value in config.items():
        if key not in ("files", "overrides"):
            lines.append(f"{key} = {_ini_value(value)}")
    lines += ["ignore_missing_imports = True", "warn_unused_ignores = False"]
    for override in config.get("overrides", []):
        modules = override.get("module", [])
        lines.append(f"[mypy-{','.join(modules if isinstance(modules, list) else [modules])}]")
        lines += [f"{k} = {_ini_value(v)}" for k, v in override.items() if k != "module"]
    lines += ["[mypy-slateboard.*]", "ignore_errors = True"]
    for module in compiled:  # a module's own section wins over the pattern
        lines += [f"[mypy-{module}]", "ignore_errors = False"]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def _captured(log: Path) -> Iterator[None]:
    """Standard output and error (the file descriptors, so the C compiler's too) go to ``log``."""
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with log.open("wb") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def first_error(log: str) -> str:
    """The line of a failed native build's output that says what went wrong (for the warning)."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    for line in lines:
        if "error" in line.lower():
            return line[:300]
    return lines[-1][:300] if lines else ""


class CustomBuildHook(BuildHookInterface):  # type: ignore[misc,type-arg,unused-ignore]
    """Compiles ``COMPILED`` into the wheel (standard wheels only) unless a pure one is wanted."""

    def dependencies(self) -> list[str]:
        if self.target_name != "wheel" or compile_mode() != "compiled":
            return []  # a pure wheel needs nothing beyond hatchling
        return list(super().dependencies())

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version != "standard":
            return
        mode = compile_mode()
        if mode != "compiled":
            self.app.display_info(f"slateboard: building a pure wheel: {mode}")
            return
        native = _native_module()
        self._tmp = tempfile.mkdtemp(prefix="slateboard-mypyc-")
        lib = Path(self._tmp) / "lib"
        log = Path(self._tmp) / "native.log"
        try:
            with _captured(log):
                self._compile(native, Path(self._tmp))
        except (Exception, SystemExit) as exc:  # mypyc exits on a type error; never fail the install
            why = first_error(log.read_text(encoding="utf-8", errors="replace")) if log.exists() else ""
            self.app.display_warning(
                f"slateboard: the native build failed ({why or f'{type(exc).__name__}: {exc}'}); "
                "building a pure wheel instead"
            )
            return
        force_include = build_data.setdefault("force_include", {})
        for built in sorted(lib.rglob("*")):
            if built.is_file():
                force_include[str(built)] = built.relative_to(lib).as_posix()
        docs = {
            m: class_docs(native.source_path(m, SRC / "slateboard").read_text(encoding="utf-8"))
            for m in native.COMPILED
        }
        docs_path = Path(self._tmp) / "_native_docs.json"
        docs_path.write_text(json.dumps(docs, indent=1, sort_keys=True), encoding="utf-8")
        force_include[str(docs_path)] = "slateboard/_native_docs.json"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        self.app.display_info(f"slateboard: compiled {len(native.COMPILED)} modules into {native.GROUP}")

    def _compile(self, native: Any, tmp: Path) -> None:
        from mypyc.build import mypycify
        from setuptools import Distribution  # type: ignore[import-untyped]

        sources = [native.source_path(m, SRC / "slateboard").relative_to(SRC).as_posix() for m in native.COMPILED]
        config = tmp / "mypy-build.ini"
        config.write_text(build_mypy_config(ROOT / "pyproject.toml", native.COMPILED), encoding="utf-8")
        cwd = Path.cwd()
        os.chdir(SRC)  # mypyc names modules after their paths relative to the working directory
        try:
            extensions = mypycify(
                [f"--config-file={config}", *sources],
                opt_level="3",
                group_name=native.GROUP,
                target_dir=str(tmp / "c"),
            )
            dist = Distribution({"name": "slateboard-native", "ext_modules": extensions})
            cmd = dist.get_command_obj("build_ext")
            cmd.build_lib = str(tmp / "lib")
            cmd.build_temp = str(tmp / "tmp")
            cmd.parallel = os.cpu_count() or 1
            cmd.ensure_finalized()
            cmd.run()
        finally:
            os.chdir(cwd)

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
