"""The install page's first command as a new user runs it: `pip install .` in a fresh clone, into a
fresh virtualenv that holds nothing but pip (none of the optional extras), once where a C
compiler is on PATH (the wheel is compiled with mypyc) and once where none is (a pure wheel).

The clone is `git clone` of this repository at HEAD (commit before running it: uncommitted
changes are not in a clone). pip builds the wheel in its isolated build environment, which has
the build hook's dependencies and the base dependencies only: the mypyc type check must pass
there without psycopg, the OpenTelemetry SDK or any other extra (issue 47). Both installs then
build and run a typed board from the Python builder with a scripted model.

Slow (the mypyc build takes minutes; the dependencies come from the package index)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slateboard import _native

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 1800

FIRST_BOARD = """
import asyncio
import json

from pydantic import BaseModel

from slateboard import Board, Runner, create_board, open_store, ref


class Notes(BaseModel):
    task: str = ""
    summary: str = ""


board = Board("notes", Notes)
board.llm_worker(
    "writer",
    instruction="Summarise the task in one line.",
    reads=[ref(Notes, lambda s: s.task)],
    writes=[ref(Notes, lambda s: s.summary)],
    model="scripted:" + json.dumps([json.dumps([{"op": "add", "path": "/summary", "value": "short"}])]),
)
board.rule("writer", on="start")
board.settings(done="state.summary != ''", answer="/summary")


async def main() -> None:
    store = await open_store("memory://")
    board_id = await create_board(store, board.build(), inputs={"task": "say it short"})
    result = await Runner(store, board_id).run()
    print(result.answer)
    await store.close()


asyncio.run(main())
"""


def _env(**extra: str) -> dict[str, str]:
    """This environment without what would point the new virtualenv back at the working tree."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "CC", "SLATEBOARD_BUILD_PURE")
    return {**{k: v for k, v in os.environ.items() if k not in drop and not k.startswith("SLATEBOARD_")}, **extra}


def _run(args: list[str | Path], *, env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        [str(a) for a in args], env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    assert done.returncode == 0, f"{args[:4]} exited {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh clone of this repository at HEAD."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout, or no git: the test installs from a fresh clone")
    where = tmp_path_factory.mktemp("clone") / "slateboard"
    _run(["git", "clone", "--quiet", ROOT, where], env=_env(), cwd=where.parent)
    return where


def _install(clone: Path, tmp: Path, env: dict[str, str]) -> tuple[Path, str]:
    """`python -m venv` and `pip install .` in the clone; the venv's python and pip's output."""
    _run([sys.executable, "-m", "venv", tmp / "venv"], env=_env(), cwd=tmp)
    python = tmp / "venv" / "bin" / "python"
    started, cpu = time.perf_counter(), os.times()
    out = _run([tmp / "venv" / "bin" / "pip", "install", "-v", "."], env=env, cwd=clone)
    after = os.times()
    child = (after.children_user - cpu.children_user) + (after.children_system - cpu.children_system)
    print(f"pip install . : wall {time.perf_counter() - started:.0f} s, CPU (children) {child:.0f} s")
    return python, out


def _check_installed(python: Path, tmp: Path) -> tuple[str, list[str]]:
    code = (
        "import importlib, json, slateboard\n"
        "from slateboard import _native\n"
        "for m in _native.COMPILED: importlib.import_module(m)\n"
        "print(json.dumps([slateboard.__file__, _native.native_mode(), _native.native_modules()]))"
    )
    where, mode, loaded = json.loads(_run([python, "-c", code], env=_env(), cwd=tmp).strip().splitlines()[-1])
    assert Path(where).is_relative_to(python.parent.parent), where  # the install, not this tree
    extras = _run([python, "-c", "import importlib.util as u; print([m for m in ('psycopg', 'opentelemetry.sdk', 'fastapi', 'mcp', 'llama_cpp') if u.find_spec(m.split('.')[0]) and u.find_spec(m)])"], env=_env(), cwd=tmp)  # fmt: skip
    assert extras.strip() == "[]", f"an optional extra was installed: {extras}"
    (tmp / "first_board.py").write_text(FIRST_BOARD, encoding="utf-8")
    assert _run([python, "first_board.py"], env=_env(), cwd=tmp).strip() == "short"
    return mode, loaded


def test_pip_install_dot_without_a_compiler_gives_a_pure_install(clone: Path, tmp_path: Path) -> None:
    # A PATH holding only the virtualenv: no cc, gcc or clang (a slim container).
    bare = tmp_path / "bin"
    bare.mkdir()
    env = _env(PATH=f"{tmp_path / 'venv' / 'bin'}{os.pathsep}{bare}")
    python, out = _install(clone, tmp_path, env)
    assert "building a pure wheel: pure (no C compiler)" in out, out[-3000:]
    mode, loaded = _check_installed(python, tmp_path)
    assert (mode, loaded) == ("pure", [])


def test_pip_install_dot_with_a_compiler_compiles_without_any_extra(clone: Path, tmp_path: Path) -> None:
    compiler = next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)
    if compiler is None:
        pytest.skip("no C compiler on PATH (cc, gcc, clang): the compiled install cannot be built here")
    python, out = _install(clone, tmp_path, _env())
    assert "native build failed" not in out, out[-4000:]  # the fallback would hide a broken type check
    mode, loaded = _check_installed(python, tmp_path)
    assert mode == "compiled"
    assert loaded == sorted(_native.COMPILED)
