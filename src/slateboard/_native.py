"""Compiled hot paths: which modules mypyc may compile, and whether the compiled ones are used.

The step's hot path (``COMPILED``: the view builder, the kernel's per-proposal checks, the
worker's prompt, decoding schema and parse, the step engine) is plain, strictly typed Python.
When ``scripts/build_native.py`` has compiled it with mypyc (``scripts/setup.sh`` does),
extension modules sit next to their sources and Python's import system prefers them. Nothing else changes:
the sources stay the reference, and every test runs against whichever is loaded.

Two cases load the sources instead, for the whole group at once (compiled modules call each
other directly, so a mix of old compiled and new source code must never run):

- ``SLATEBOARD_PURE=1`` in the environment (to compare, or to debug in plain Python);
- any source newer than the compiled group: an edited module takes effect at once, with a
  warning to rebuild, instead of a stale extension silently running old code.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from collections.abc import Sequence
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
    "slateboard.views._fill",
    "slateboard.views._measure",
    "slateboard.views._model",
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
"""The modules ``scripts/build_native.py`` compiles, as one mypyc group: the step's hot path
(views, kernel checks, the worker's prompt, decoding schema and parse, the step engine, the
scheduler and agenda, and the memory store). Not here: ``kernel.jsonvalue`` (it crashes mypyc);
modules whose classes users subclass (``workers.llm``: a compiled class cannot be subclassed in
Python); the runner (its methods would lose their docstrings, for little gain); and the ones off
the hot path. Compiled modules keep ``await`` out of ``except`` and ``finally`` blocks
(``tests/test_native.py`` says why)."""

GROUP = "slateboard._native"
"""The mypyc group name; its shared library is ``slateboard/_native__mypyc<suffix>``."""

PURE_ENV = "SLATEBOARD_PURE"

_PACKAGE_DIR = Path(__file__).resolve().parent
_SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def shared_library(package_dir: Path = _PACKAGE_DIR) -> Path:
    """Where the compiled group's shared library is (or would be) for this interpreter."""
    return package_dir / f"{GROUP.rpartition('.')[2]}__mypyc{_SUFFIX}"


def source_path(module: str, package_dir: Path = _PACKAGE_DIR) -> Path:
    """The ``.py`` file of one ``slateboard.*`` module."""
    parts = module.split(".")[1:]
    return package_dir.joinpath(*parts[:-1], parts[-1] + ".py")


def stale_sources(library: Path, modules: Sequence[str], package_dir: Path = _PACKAGE_DIR) -> list[str]:
    """The modules not compiled since their source last changed: those whose source is newer
    than ``library`` or that have no extension module (all of them when ``library`` is missing)."""
    try:
        built = library.stat().st_mtime
    except OSError:
        return list(modules)
    stale = []
    for module in modules:
        source = source_path(module, package_dir)
        if source.stat().st_mtime > built or not source.with_name(source.stem + _SUFFIX).exists():
            stale.append(module)
    return stale


class _SourceFinder:
    """A meta-path finder that loads the compiled group's modules from their ``.py`` files."""

    def __init__(self, modules: Sequence[str]) -> None:
        self.modules = frozenset(modules)

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name not in self.modules:
            return None
        return importlib.util.spec_from_file_location(name, source_path(name))


class _StrayFinder:
    """A meta-path finder that loads a ``slateboard`` module outside ``COMPILED`` from its ``.py``
    file when an extension module sits next to it: one left by a build whose group listed it
    (its shared library is gone or no longer holds it, so it must never be imported)."""

    def __init__(self, compiled: Sequence[str], package_dir: Path = _PACKAGE_DIR) -> None:
        self.compiled = frozenset(compiled)
        self.package_dir = package_dir

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not name.startswith("slateboard.") or name in self.compiled:
            return None
        source = source_path(name, self.package_dir)
        if not source.with_name(source.stem + _SUFFIX).exists() or not source.exists():
            return None
        return importlib.util.spec_from_file_location(name, source)


def _document(module: ModuleType, docs: dict[str, str]) -> None:
    for name, doc in docs.items():
        cls = getattr(module, name, None)
        if isinstance(cls, type) and not cls.__doc__:
            cls.__doc__ = doc


class _DocumentedLoader(importlib.abc.Loader):
    """Loads a compiled module, then gives its classes back the docstrings mypyc leaves out
    (``help()`` and the public-API test read them); they come from ``docs_file()``."""

    def __init__(self, inner: importlib.abc.Loader, docs: dict[str, str]) -> None:
        self.inner = inner
        self.docs = docs

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        _document(module, self.docs)


class _CompiledFinder:
    """A meta-path finder that loads the compiled group's modules through ``_DocumentedLoader``.
    Compiled modules import each other without the import system: ``restore_docs`` covers
    those, once ``slateboard`` has been imported."""

    def __init__(self, docs: dict[str, dict[str, str]]) -> None:
        self.docs = docs

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        docs = self.docs.get(name)
        if not docs:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _DocumentedLoader(spec.loader, docs)
        return spec


def docs_file(package_dir: Path = _PACKAGE_DIR) -> Path:
    """The class docstrings of the compiled group, written by ``scripts/build_native.py``."""
    return package_dir / "_native_docs.json"


_mode = "pure"


def install() -> None:
    """Decide whether the compiled group is used; runs once, when ``slateboard`` is imported."""
    global _mode
    sys.meta_path.insert(0, _StrayFinder(COMPILED))
    library = shared_library()
    if not library.exists():
        return
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        _mode = "pure (SLATEBOARD_PURE)"
    else:
        stale = stale_sources(library, COMPILED)
        if not stale:
            _mode = "compiled"
            try:
                docs = json.loads(docs_file().read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return  # built by hand without the docs: the modules work, their classes lack docstrings
            sys.meta_path.insert(0, _CompiledFinder(docs))
            return
        _mode = "pure (stale build)"
        warnings.warn(
            f"slateboard: {len(stale)} module(s) not compiled since their sources changed "
            f"({', '.join(stale[:3])}{', ...' if len(stale) > 3 else ''}); using the Python sources. "
            "Run `python scripts/build_native.py` to rebuild.",
            RuntimeWarning,
            stacklevel=2,
        )
    sys.meta_path.insert(0, _SourceFinder(COMPILED))


def restore_docs() -> None:
    """Give the classes of the compiled modules imported so far their docstrings back."""
    for finder in sys.meta_path:
        if isinstance(finder, _CompiledFinder):
            for name, docs in finder.docs.items():
                module = sys.modules.get(name)
                if module is not None:
                    _document(module, docs)


def native_mode() -> str:
    """``compiled`` when the compiled group is in use; otherwise ``pure`` and why."""
    return _mode


def native_modules() -> list[str]:
    """The ``slateboard`` modules loaded so far from compiled extensions."""
    return sorted(
        name
        for name, module in list(sys.modules.items())
        if name.startswith("slateboard.")
        and not name.endswith("__mypyc")  # the group's shared library, not a module of ours
        and str(getattr(module, "__file__", "") or "").endswith(_SUFFIX)
    )


install()
