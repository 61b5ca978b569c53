"""Compiled hot paths: which modules mypyc compiles when a wheel is built, and whether they are loaded.

The step's hot path (``COMPILED``: the view builder, the kernel's per-proposal checks, the
worker's prompt, decoding schema and parse, the step engine) is plain, strictly typed Python.
Building a wheel (``hatch_build.py``, a hatch build hook) compiles it with mypyc where a C
compiler exists, unless ``SLATEBOARD_BUILD_PURE=1`` asks for a pure wheel: the compiled wheel
holds the extension modules *and* the sources. The working tree is always pure Python: nothing
is compiled in place, so an edited source always takes effect and no import hook chooses
between the two. Every test runs against whichever build is installed.
"""

from __future__ import annotations

import importlib.machinery
import json
import sys
from pathlib import Path
from types import ModuleType

COMPILED: tuple[str, ...] = (
    "slateboard.kernel.anchor",
    "slateboard.kernel.canonical",
    "slateboard.kernel.cel",
    "slateboard.kernel.circuit",
    "slateboard.kernel.contract",
    "slateboard.kernel.invariants",
    "slateboard.kernel.kernel",
    "slateboard.kernel.patch",
    "slateboard.kernel.pointer",
    "slateboard.kernel.record",
    "slateboard.kernel.schema",
    "slateboard.kernel.statehash",
    "slateboard.runtime.accounting",
    "slateboard.runtime.session",
    "slateboard.runtime.step",
    "slateboard.scheduling.agenda",
    "slateboard.scheduling.rules",
    "slateboard.scheduling.stages",
    "slateboard.stores._common",
    "slateboard.stores.memory",
    "slateboard.views._build",
    "slateboard.views._cache",
    "slateboard.views._costs",
    "slateboard.views._fill",
    "slateboard.views._measure",
    "slateboard.views._model",
    "slateboard.views._order",
    "slateboard.views._quarantine",
    "slateboard.views._region",
    "slateboard.workers.constrain._fragments",
    "slateboard.workers.constrain._schema",
    "slateboard.workers.constrain._sketch",
    "slateboard.workers.constrain._targets",
    "slateboard.workers.constrain._values",
    "slateboard.workers.parse",
    "slateboard.workers.prompt",
)
"""The modules the wheel build (``hatch_build.py``) compiles, as one mypyc group: the step's hot path
(views, kernel checks, the worker's prompt, decoding schema and parse, the step engine, the
scheduler and agenda, and the memory store). Not here: ``kernel.jsonvalue`` (it crashes mypyc);
modules whose classes users subclass (``workers.llm``: a compiled class cannot be subclassed in
Python); the runner (its methods would lose their docstrings, for little gain); and the ones off
the hot path. Compiled modules keep ``await`` out of ``except`` and ``finally`` blocks
(``tests/test_native.py`` says why)."""

GROUP = "slateboard._native"
"""The mypyc group name; its shared library is ``slateboard/_native__mypyc<suffix>``."""

_PACKAGE_DIR = Path(__file__).resolve().parent
_SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def shared_library(package_dir: Path = _PACKAGE_DIR) -> Path:
    """Where the compiled group's shared library is (or would be) for this interpreter."""
    return package_dir / f"{GROUP.rpartition('.')[2]}__mypyc{_SUFFIX}"


def source_path(module: str, package_dir: Path = _PACKAGE_DIR) -> Path:
    """The ``.py`` file of one ``slateboard.*`` module."""
    parts = module.split(".")[1:]
    return package_dir.joinpath(*parts[:-1], parts[-1] + ".py")


def docs_file(package_dir: Path = _PACKAGE_DIR) -> Path:
    """The class docstrings of the compiled group, written by the wheel build next to it."""
    return package_dir / "_native_docs.json"


def restore_docs() -> None:
    """Give the classes of the compiled modules imported so far the docstrings mypyc leaves out
    (``help()`` and the public-API test read them). A no-op in a pure install."""
    try:
        docs: dict[str, dict[str, str]] = json.loads(docs_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # pure, or built by hand without the docs: the classes keep what they have
    for name, classes in docs.items():
        module = sys.modules.get(name)
        if module is not None:
            _document(module, classes)


def _document(module: ModuleType, docs: dict[str, str]) -> None:
    for name, doc in docs.items():
        cls = getattr(module, name, None)
        if isinstance(cls, type) and not cls.__doc__:
            cls.__doc__ = doc


def native_modules() -> list[str]:
    """The ``slateboard`` modules loaded so far from compiled extensions."""
    return sorted(
        name
        for name, module in list(sys.modules.items())
        if name.startswith("slateboard.")
        and not name.endswith("__mypyc")  # the group's shared library, not a module of ours
        and str(getattr(module, "__file__", "") or "").endswith(_SUFFIX)
    )


def native_mode() -> str:
    """``compiled`` when this install holds the compiled group (a compiled wheel), else ``pure``."""
    return "compiled" if shared_library().exists() else "pure"
