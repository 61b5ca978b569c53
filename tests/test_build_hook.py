"""The wheel build hook (``hatch_build.py``) without building a wheel (fast; ``test_wheel.py`` and
``docs/test_install_clone.py`` build real ones).

- The native step's type check runs under a build-only mypy configuration: a module the build
  environment lacks (an optional extra) is no error, an error in a module that is not compiled
  is no error, and an error in a compiled module still is one.
- Any failure of the native step (mypyc exiting on a type error, a C compiler that fails) gives a
  pure wheel and exactly one warning line saying why: an install never fails for it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from mypy import api as mypy_api

ROOT = Path(__file__).resolve().parent.parent


class _Interface:
    """Stands in for hatchling's BuildHookInterface (hatchling lives in the build environment only)."""

    def __init__(self) -> None:
        self.target_name = "wheel"


class _App:
    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.infos: list[str] = []

    def display_warning(self, message: str) -> None:
        self.warnings.append(message)

    def display_info(self, message: str) -> None:
        self.infos.append(message)


@pytest.fixture
def hook_module(monkeypatch: pytest.MonkeyPatch) -> Any:
    interface = types.ModuleType("hatchling.builders.hooks.plugin.interface")
    interface.BuildHookInterface = _Interface  # type: ignore[attr-defined]
    for name in ("hatchling", "hatchling.builders", "hatchling.builders.hooks", "hatchling.builders.hooks.plugin"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, interface.__name__, interface)
    spec = importlib.util.spec_from_file_location("_slateboard_hatch_build", ROOT / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PYPROJECT = """
[tool.mypy]
strict = true
files = ["pkg"]

[[tool.mypy.overrides]]
module = ["some_untyped_lib"]
ignore_missing_imports = true
"""


def _package(root: Path, *, compiled_error: bool) -> list[str]:
    """A package laid out like slateboard's: a compiled module importing one that needs an extra."""
    pkg = root / "slateboard"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "extra.py").write_text(
        "import not_installed_extra_sdk  # an optional extra the build environment lacks\n"
        "def client() -> int:\n"
        "    return not_installed_extra_sdk.connect()\n"
        "wrong: int = 'not an int'  # an error in a module that is not compiled\n",
        encoding="utf-8",
    )
    body = "from slateboard.extra import client\n\ndef hot(x: int) -> int:\n    return x + 1\n"
    if compiled_error:
        body += "broken: int = 'x'\n"
    (pkg / "hot.py").write_text(body, encoding="utf-8")
    return ["slateboard/hot.py"]


@pytest.mark.parametrize("compiled_error", [False, True])
def test_the_build_type_check_tolerates_missing_extras_but_not_errors_in_compiled_modules(
    hook_module: Any, tmp_path: Path, compiled_error: bool
) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    config = tmp_path / "build.ini"
    config.write_text(hook_module.build_mypy_config(tmp_path / "pyproject.toml", ["slateboard.hot"]), encoding="utf-8")
    sources = _package(tmp_path, compiled_error=compiled_error)
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        out, err, status = mypy_api.run([f"--config-file={config}", "--cache-dir=/dev/null", *sources])
    finally:
        os.chdir(cwd)
    if compiled_error:
        assert status == 1 and "slateboard/hot.py" in out and "extra.py" not in out, out
    else:
        assert status == 0, out + err
    # the project's own settings came along; `files` did not (mypyc gives the sources)
    text = config.read_text(encoding="utf-8")
    assert "strict = True" in text and "[mypy-some_untyped_lib]" in text and "files" not in text


def test_the_real_build_config_keeps_the_project_settings(hook_module: Any) -> None:
    from slateboard import _native

    text = hook_module.build_mypy_config(ROOT / "pyproject.toml", _native.COMPILED)
    assert "plugins = pydantic.mypy" in text and "strict = True" in text
    for module in _native.COMPILED:
        assert f"[mypy-{module}]\nignore_errors = False" in text


def test_a_failing_native_step_gives_a_pure_wheel_and_one_warning(
    hook_module: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hook_module, "_c_compiler", lambda: "/usr/bin/cc")
    monkeypatch.delenv(hook_module.PURE_ENV, raising=False)

    def failing_compile(native: Any, tmp: Path) -> None:
        os.write(2, b"slateboard/telemetry.py:105: error: Cannot find implementation or library stub\n")
        raise SystemExit(1)  # what mypyc does on a type error

    hook = hook_module.CustomBuildHook()
    hook.app = _App()
    monkeypatch.setattr(hook, "_compile", failing_compile)
    build_data: dict[str, Any] = {}
    hook.initialize("standard", build_data)
    hook.finalize("standard", build_data, "")
    assert build_data == {}  # nothing compiled included, the tag stays py3-none-any
    assert len(hook.app.warnings) == 1
    (warning,) = hook.app.warnings
    assert "\n" not in warning and "building a pure wheel instead" in warning
    assert "telemetry.py:105: error" in warning


def test_a_compiler_that_breaks_gives_a_pure_wheel_too(hook_module: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hook_module, "_c_compiler", lambda: "/usr/bin/cc")
    monkeypatch.delenv(hook_module.PURE_ENV, raising=False)

    def crashing_compile(native: Any, tmp: Path) -> None:
        raise RuntimeError("command 'cc' failed with exit code 1")

    hook = hook_module.CustomBuildHook()
    hook.app = _App()
    monkeypatch.setattr(hook, "_compile", crashing_compile)
    build_data: dict[str, Any] = {}
    hook.initialize("standard", build_data)
    assert build_data == {}
    assert len(hook.app.warnings) == 1 and "RuntimeError" in hook.app.warnings[0]
