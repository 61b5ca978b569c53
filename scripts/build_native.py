#!/usr/bin/env python3
"""Compile slateboard's hot paths with mypyc, in place (next to their sources).

The modules are listed in ``slateboard._native.COMPILED`` (the view builder and the kernel's
per-proposal checks). mypyc is part of mypy (the dev extra) and needs a C compiler. The sources
stay the reference: ``SLATEBOARD_PURE=1`` imports them instead, and an edited source makes
``slateboard`` fall back to all of them, with a warning, until this script runs again.

    python scripts/build_native.py             # build (about a minute on two cores)
    python scripts/build_native.py --if-stale  # build only when a source changed (scripts/setup.sh)
    python scripts/build_native.py --clean     # remove the compiled modules
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"


def _compiled_files() -> list[Path]:
    suffixes = (".so", ".pyd")
    return [p for p in (SRC / "slateboard").rglob("*") if p.suffix in suffixes]


def class_docs(source: str) -> dict[str, str]:
    """The docstrings of a module's top-level classes, by class name."""
    docs: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                docs[node.name] = doc
    return docs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clean", action="store_true", help="remove the compiled modules and the build folder")
    ap.add_argument("--if-stale", action="store_true", help="do nothing when the compiled group is up to date")
    args = ap.parse_args(argv)
    build_dir = ROOT / "build" / "native"
    sys.path.insert(0, str(SRC))
    os.environ["SLATEBOARD_PURE"] = "1"  # the build must not import what it is replacing
    from slateboard._native import COMPILED, GROUP, docs_file, shared_library, source_path, stale_sources

    if args.if_stale and not stale_sources(shared_library(), COMPILED):
        print(f"the compiled group {GROUP} is up to date")
        return 0
    for path in _compiled_files():
        path.unlink()
    docs_file().unlink(missing_ok=True)
    if args.clean:
        shutil.rmtree(build_dir, ignore_errors=True)
        print(f"removed the compiled modules and {build_dir.relative_to(ROOT)}")
        return 0

    from mypyc.build import mypycify
    from setuptools import setup  # type: ignore[import-untyped]

    sources = [str(source_path(m).relative_to(SRC)) for m in COMPILED]
    os.chdir(SRC)  # mypyc names modules after their paths relative to the working directory
    extensions = mypycify(
        [f"--config-file={ROOT / 'pyproject.toml'}", *sources],
        opt_level="3",
        group_name=GROUP,
        target_dir=str(build_dir / "c"),
    )
    jobs = str(os.cpu_count() or 1)
    setup(
        name="slateboard-native",
        ext_modules=extensions,
        script_args=[
            "build_ext",
            "--inplace",
            "--parallel",
            jobs,
            "--build-temp",
            str(build_dir / "tmp"),
            "--build-lib",
            str(build_dir / "lib"),
        ],
    )
    # mypyc drops class docstrings; slateboard._native puts them back from this file.
    docs = {m: class_docs(source_path(m).read_text(encoding="utf-8")) for m in COMPILED}
    docs_file().write_text(json.dumps(docs, indent=1, sort_keys=True), encoding="utf-8")
    print(f"compiled {len(COMPILED)} modules into {GROUP}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
