"""The compiled hot paths (``slateboard._native``; compiled only into wheels, by ``hatch_build.py``).

- The working tree is pure Python: no extension module sits in it, and importing it loads none
  (``test_wheel.py`` builds the compiled wheel and tests it, against these sources too).
- Source rules that keep the compiled modules behaving as the sources do (mypyc 2.4).
"""

from __future__ import annotations

import ast
import importlib.machinery
import json
import subprocess
import sys
from pathlib import Path

import slateboard
from slateboard import _native

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
PACKAGE = Path(slateboard.__file__).resolve().parent


def test_every_listed_module_has_a_source() -> None:
    missing = [m for m in _native.COMPILED if not _native.source_path(m).is_file()]
    assert missing == []


def test_a_source_tree_holds_and_loads_no_extension() -> None:
    if _native.native_mode() == "compiled":
        assert _native.shared_library().exists()  # an installed compiled wheel: test_wheel.py's case
        return
    assert [p for p in PACKAGE.rglob("*") if p.suffix in (".so", ".pyd")] == []
    code = (
        "import json, importlib, slateboard\n"
        "from slateboard._native import COMPILED, native_mode, native_modules\n"
        "for m in COMPILED: importlib.import_module(m)\n"
        "print(json.dumps([native_mode(), native_modules()]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == ["pure", []]


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
