"""The compiled hot paths (``slateboard._native``, built by ``scripts/build_native.py``).

- When the group is built, it is what ``slateboard`` imports, and ``scripts/test.sh`` requires it
  where a C compiler exists (``SLATEBOARD_REQUIRE_NATIVE=1``), so CI cannot silently test the
  sources only.
- Compiled and pure Python agree: the same seeded workload of valid and invalid proposals and of
  views at several budgets gives the same records, state hashes and views in a process that
  imports the sources (``SLATEBOARD_PURE=1``). The view builder is also compared with a frozen
  pure-Python copy in ``test_views_reference.py``, in this process.
- An edited source makes the whole group fall back to the sources, and the finder that does it
  loads only the listed modules.
"""

from __future__ import annotations

import ast
import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import slateboard
from slateboard import _native

TESTS = Path(__file__).resolve().parent
BUILT = _native.shared_library().exists()
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
PURE_ASKED = os.environ.get(_native.PURE_ENV, "") not in ("", "0")


def _require_current_build() -> None:
    """Skip (or, where CI requires the build, fail) unless an up-to-date compiled group is here."""
    required = os.environ.get("SLATEBOARD_REQUIRE_NATIVE") == "1"
    if not BUILT:
        if required:
            pytest.fail("SLATEBOARD_REQUIRE_NATIVE=1 but the compiled group is missing: run scripts/build_native.py")
        pytest.skip("the compiled group is not built here (python scripts/build_native.py builds it)")
    stale = _native.stale_sources(_native.shared_library(), _native.COMPILED)
    if stale:
        message = f"the compiled group is older than {', '.join(stale[:3])}: run scripts/build_native.py"
        if required:
            pytest.fail(message)
        pytest.skip(message)


def _workload(pure: bool) -> list[list[object]]:
    env = {**os.environ, _native.PURE_ENV: "1" if pure else "0", "PYTHONPATH": str(TESTS)}
    out = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-m", "_native_workload"],
        env=env,
        cwd=TESTS,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    mode, rows = json.loads(out.stdout)
    assert mode == ("pure (SLATEBOARD_PURE)" if pure and BUILT else "compiled" if BUILT else "pure")
    assert isinstance(rows, list)
    return rows


def test_the_compiled_group_is_used_when_built() -> None:
    _require_current_build()
    if PURE_ASKED:
        pytest.skip("SLATEBOARD_PURE is set: this run imports the sources on purpose")
    assert _native.native_mode() == "compiled", _native.native_mode()
    for name in _native.COMPILED:
        __import__(name)
    assert _native.native_modules() == sorted(_native.COMPILED)
    assert slateboard.Kernel.__module__ == "slateboard.kernel.kernel"  # the public API is unchanged


def test_compiled_and_pure_python_agree_on_records_and_views() -> None:
    _require_current_build()
    compiled, pure = _workload(pure=False), _workload(pure=True)
    assert len(compiled) > 300
    stages = {row[2] for row in compiled if row[0] == "rejected"}
    assert {"parse", "authorise", "schema", "apply", "invariants"} <= stages, stages  # each path is exercised
    assert any(row[0] == "accepted" for row in compiled)
    for i, (a, b) in enumerate(zip(compiled, pure, strict=True)):
        assert a == b, f"row {i} differs: compiled {a} vs pure {b}"


def test_an_edited_source_is_stale(tmp_path: Path) -> None:
    pkg = tmp_path / "slateboard"
    (pkg / "kernel").mkdir(parents=True)
    modules = ("slateboard.kernel.patch", "slateboard.kernel.schema")
    for name in modules:
        _native.source_path(name, pkg).write_text("")
    library = _native.shared_library(pkg)
    assert _native.stale_sources(library, modules, pkg) == list(modules)  # not built: all stale
    library.write_bytes(b"")
    os.utime(library, (2_000_000_000, 2_000_000_000))
    assert _native.stale_sources(library, modules, pkg) == list(modules)  # no extension modules yet
    for name in modules:
        source = _native.source_path(name, pkg)
        source.with_name(source.stem + SUFFIX).write_bytes(b"")
    assert _native.stale_sources(library, modules, pkg) == []
    os.utime(_native.source_path("slateboard.kernel.schema", pkg), (2_000_000_001, 2_000_000_001))
    assert _native.stale_sources(library, modules, pkg) == ["slateboard.kernel.schema"]


def test_the_source_finder_loads_only_the_listed_modules() -> None:
    finder = _native._SourceFinder(["slateboard.kernel.patch"])
    spec = finder.find_spec("slateboard.kernel.patch")
    assert spec is not None and spec.origin is not None
    assert Path(spec.origin) == Path(_native.__file__).parent / "kernel" / "patch.py"
    assert finder.find_spec("slateboard.kernel.kernel") is None
    assert finder.find_spec("json") is None


def test_an_extension_left_by_an_older_build_is_never_imported(tmp_path: Path) -> None:
    # A module that an older build compiled and COMPILED no longer lists keeps its extension
    # file until the next build: importing it would run old code (or fail to find its group).
    pkg = tmp_path / "slateboard"
    (pkg / "runtime").mkdir(parents=True)
    for name in ("runner", "step"):
        (pkg / "runtime" / f"{name}.py").write_text("")
        (pkg / "runtime" / f"{name}{SUFFIX}").write_bytes(b"")
    (pkg / "runtime" / "events.py").write_text("")
    finder = _native._StrayFinder(["slateboard.runtime.step"], pkg)
    spec = finder.find_spec("slateboard.runtime.runner")
    assert spec is not None and spec.origin == str(pkg / "runtime" / "runner.py")
    assert finder.find_spec("slateboard.runtime.step") is None  # the group's own: compiled or _SourceFinder
    assert finder.find_spec("slateboard.runtime.events") is None  # no extension: the usual import
    assert finder.find_spec("slateboard.runtime") is None and finder.find_spec("json") is None


def test_pure_mode_imports_no_extension() -> None:
    code = (
        "import json, slateboard, slateboard.views, slateboard.kernel\n"
        "from slateboard._native import native_mode, native_modules\n"
        "print(json.dumps([native_mode(), native_modules()]))"
    )
    env = {**os.environ, _native.PURE_ENV: "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    mode, loaded = json.loads(out.stdout)
    assert loaded == []
    assert mode == ("pure (SLATEBOARD_PURE)" if BUILT else "pure")


def test_no_compiled_function_gives_one_except_name_two_types() -> None:
    """Compiled, a local name has one type: ``except A as exc`` then ``except B as exc`` in one
    function makes a B caught there a TypeError (the kernel's internal-error net once raised
    instead of rejecting). Each handler of a compiled function names its exception apart."""
    found = []
    for module in _native.COMPILED:
        tree = ast.parse(_native.source_path(module).read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                types: dict[str, set[str]] = {}
                for node in ast.walk(fn):
                    if isinstance(node, ast.ExceptHandler) and node.name:
                        types.setdefault(node.name, set()).add(ast.unparse(node.type) if node.type else "")
                found += [f"{module}.{fn.name}: {n} is {sorted(t)}" for n, t in types.items() if len(t) > 1]
    assert found == []


def test_no_compiled_function_awaits_inside_a_handler() -> None:
    """Compiled by mypyc (2.4), an ``await`` inside ``except`` or ``finally`` leaves the exception
    that block handles set in the thread. Inside ``finally``, a later call with such a block
    raised it again (a losing runner's BoardBusy ended the next, unrelated run); inside
    ``except``, stale store conflicts became the context of unrelated later errors. Compiled
    modules keep awaits out of handlers (note the exception, await after the block, re-raise);
    ``async with`` is not affected."""
    found = []
    for module in _native.COMPILED:
        tree = ast.parse(_native.source_path(module).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Try):
                handlers = [*node.finalbody, *(s for h in node.handlers for s in h.body)]
                found += [
                    f"{module} line {sub.lineno}"
                    for stmt in handlers
                    for sub in ast.walk(stmt)
                    if isinstance(sub, (ast.Await, ast.AsyncFor, ast.AsyncWith))
                ]
    assert found == []
