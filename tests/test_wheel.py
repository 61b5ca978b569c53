"""The compiled wheel (``hatch_build.py``), built, installed into a fresh virtualenv and exercised there.

- Built where a C compiler exists, the wheel has a platform tag and holds the mypyc group: in the
  virtualenv, every module of ``slateboard._native.COMPILED`` is loaded from an extension module,
  and the public classes keep their docstrings.
- Users' subclasses of ``Kernel``, ``Proposal`` and the stores (the compiled ``MemoryStore``, and
  ``SqliteStore``) work, and pass the store conformance suite (``slateboard.testing``) there.
- Compiled and pure Python agree: the same seeded workload of valid and invalid proposals and of
  views at several budgets (``_native_workload.py``) gives the same records, state hashes and
  views in the virtualenv as on this tree's sources.
- ``SLATEBOARD_BUILD_PURE=1`` builds a pure ``py3-none-any`` wheel with no extension module.

Slow (minutes: mypyc, and the dependencies installed into the virtualenv from the index).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from slateboard import _native

pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

IN_VENV_TESTS = '''
import pytest

from slateboard import Kernel, Proposal
from slateboard.stores import MemoryStore
from slateboard.stores.sqlite import SqliteStore
from slateboard.testing import StoreConformance
from slateboard.testing.kit import WORKERS, Board, compiled, entry


class CountingMemoryStore(MemoryStore):
    """A user's subclass of the compiled MemoryStore: counts appends, then defers to it."""

    appends = 0

    async def append(self, *args, **kwargs):
        type(self).appends += 1
        return await super().append(*args, **kwargs)


class TaggedSqliteStore(SqliteStore):
    """A user's subclass of the SQLite store (its bases live in compiled modules)."""

    tag = "mine"


class TestMemorySubclass(StoreConformance):
    @pytest.fixture
    async def open_another(self):
        store = CountingMemoryStore()
        yield lambda: _same(store)
        await store.close()


class TestSqliteSubclass(StoreConformance):
    @pytest.fixture
    async def open_another(self, tmp_path):
        opened = []

        async def make():
            store = await TaggedSqliteStore.open(f"sqlite:///{tmp_path / 'board.db'}")
            assert isinstance(store, TaggedSqliteStore) and store.tag == "mine"
            opened.append(store)
            return store

        yield make
        for store in opened:
            await store.close()


async def _same(store):
    return store


class AuditingKernel(Kernel):
    """A user's subclass of the compiled Kernel: keeps every proposal it prepares."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen = []

    def prepare(self, proposal, *args, **kwargs):
        self.seen.append(proposal)
        return super().prepare(proposal, *args, **kwargs)


class NamedProposal(Proposal):
    """A user's subclass of the compiled Proposal dataclass."""

    def label(self):
        return f"{self.worker}:{len(str(self.patch))}"


async def test_subclassed_kernel_and_proposal_commit_through_a_subclassed_store():
    store = CountingMemoryStore()
    bp = compiled()
    info = await store.create_board(bp.spec.to_json(), bp.initial_state(), agenda=[])
    board = Board(store, info.board_id, AuditingKernel(bp))
    before = CountingMemoryStore.appends
    worker = WORKERS[0]
    patch = entry(worker, "hello")
    proposal = NamedProposal(worker, patch)
    assert proposal.label() == f"{worker}:{len(str(patch))}"
    decision = board.kernel.prepare(proposal)
    assert board.kernel.seen == [proposal]
    assert decision.record.outcome == "accepted", decision.record
    await store.append(info.board_id, decision.record, state=board.kernel.state)
    record = board.kernel.commit(decision)
    assert CountingMemoryStore.appends == before + 1
    loaded = await store.load_board(info.board_id)
    assert [r.to_json() for r in loaded.records][-1] == record.to_json()
'''


def _clean_env(**extra: str) -> dict[str, str]:
    """This environment without what would point the virtualenv back at the working tree."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return {**env, **extra}


def _run(args: list[str | Path], *, env: dict[str, str], cwd: Path | None = None, timeout: int = 1800) -> str:
    out = subprocess.run([str(a) for a in args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{args[:4]} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout


def _build(dest: Path, **env: str) -> Path:
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", dest, ROOT], env=_clean_env(**env))
    wheels = list(dest.glob("slateboard-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv holding the compiled wheel, its dependencies and pytest."""
    compiler = (os.environ.get("CC", "").split() or ["cc"])[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}): the wheel would be pure")
    tmp = tmp_path_factory.mktemp("wheel")
    wheel = _build(tmp / "dist", SLATEBOARD_BUILD_PURE="0")
    assert not wheel.name.endswith("-none-any.whl"), wheel.name  # a platform wheel
    names = zipfile.ZipFile(wheel).namelist()
    assert "slateboard/_native_docs.json" in names
    assert any(n.startswith("slateboard/_native__mypyc") for n in names)
    _run([sys.executable, "-m", "venv", tmp / "venv"], env=_clean_env())
    python = tmp / "venv" / "bin" / "python"
    _run([python, "-m", "pip", "install", "--quiet", wheel, "pytest>=8", "pytest-asyncio>=0.24"], env=_clean_env())
    return python


def test_the_compiled_modules_are_loaded_from_the_wheel(venv_python: Path) -> None:
    code = (
        "import json, importlib, slateboard\n"
        "from slateboard import _native\n"
        "for m in _native.COMPILED: importlib.import_module(m)\n"
        "print(json.dumps([slateboard.__file__, _native.native_mode(), _native.native_modules(),"
        " slateboard.Kernel.__doc__, slateboard.Kernel.__module__]))"
    )
    where, mode, loaded, doc, module = json.loads(_run([venv_python, "-c", code], env=_clean_env(), cwd=Path("/")))
    assert Path(where).is_relative_to(venv_python.parent.parent), where  # the wheel, not this tree
    assert mode == "compiled"
    assert loaded == sorted(_native.COMPILED)
    assert doc and "board" in doc  # class docstrings restored from _native_docs.json
    assert module == "slateboard.kernel.kernel"  # the public API is unchanged


def test_subclasses_pass_the_conformance_suite_on_the_compiled_wheel(venv_python: Path, tmp_path: Path) -> None:
    (tmp_path / "test_in_venv.py").write_text(IN_VENV_TESTS, encoding="utf-8")
    out = _run(
        [venv_python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "asyncio_mode=auto", tmp_path],
        env=_clean_env(),
        cwd=tmp_path,
    )
    assert " passed" in out and "failed" not in out, out[-2000:]


def test_compiled_and_pure_python_agree_on_records_and_views(venv_python: Path) -> None:
    compiled = json.loads(_run([venv_python, "-m", "_native_workload"], env=_clean_env(), cwd=TESTS))
    pure = json.loads(_run([sys.executable, "-m", "_native_workload"], env=dict(os.environ), cwd=TESTS))
    assert compiled[0] == "compiled" and pure[0] == "pure"
    rows, expected = compiled[1], pure[1]
    assert len(rows) > 300
    stages = {row[2] for row in rows if row[0] == "rejected"}
    assert {"parse", "authorise", "schema", "apply", "invariants"} <= stages, stages  # each path is exercised
    for i, (a, b) in enumerate(zip(rows, expected, strict=True)):
        assert a == b, f"row {i} differs: compiled {a} vs pure {b}"


def test_a_pure_wheel_on_request(tmp_path: Path) -> None:
    wheel = _build(tmp_path, SLATEBOARD_BUILD_PURE="1")
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.endswith((".so", ".pyd")) or n.endswith("_native_docs.json")]
    assert "slateboard/kernel/kernel.py" in names
