"""Fork a board: a new board that starts from another board's state at a version.

The child is an ordinary board (it runs, resumes, replays and verifies on its own): its initial
state is the parent's state at ``version`` and its agenda the start rules of that state. Its
board metadata carries a ``parent`` object binding where it came from: the parent's id, the
version, the seq and hash of the parent's record that reached that version, and the state hash.
``verify_fork`` re-reads the parent's log up to that record, replays it and checks every one of
those values, so editing the parent's records before the fork point fails the child's check. The
parent is only read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..blueprint.compile import CompiledBlueprint, compile_blueprint
from ..errors import InvalidInput
from ..kernel.canonical import JSON
from ..kernel.record import GENESIS
from ..kernel.replay import replay
from ..stores.base import BoardInfo, Store
from .runner import create_board

__all__ = [
    "PARENT_KEY",
    "ForkError",
    "fork_board",
    "fork_children",
    "fork_parent",
    "lineage_json",
    "lineage_line",
    "verify_fork",
]

PARENT_KEY = "parent"
"""Key in a forked board's metadata holding its parent binding."""


class ForkError(InvalidInput):
    """A fork that cannot be made, or a child whose parent binding does not check out."""


async def _prefix(store: Store, board_id: str, version: int) -> tuple[dict[str, Any], Any, int, str, str]:
    """The parent's blueprint JSON, its state at ``version``, and the seq, record hash and state
    hash of the record that reached it (seq 0 and the genesis hash for version 0)."""
    loaded = await store.load_board(board_id)
    info = await store.board_info(board_id)
    if version < 0 or version > info.version:
        raise ForkError(f"--at {version} is outside board {board_id}'s versions (0 to {info.version})")
    records = await store.read_records(board_id)
    cut = 0 if version == 0 else next(r.seq for r in records if r.version == version)
    blueprint = compile_blueprint(loaded.blueprint)
    report = replay(blueprint, blueprint.initial_state(), records[:cut])
    if not report.ok:
        raise ForkError(f"board {board_id} does not replay up to seq {cut}: {report}")
    record_hash = records[cut - 1].hash if cut else GENESIS
    return dict(loaded.blueprint), report.state, cut, record_hash, report.state_hash


async def fork_board(
    store: Store, board_id: str, version: int, blueprint: CompiledBlueprint | dict[str, Any] | None = None
) -> str:
    """Create a running child board from ``board_id``'s state at ``version`` (optionally under
    another ``blueprint``, whose schema and invariants must accept that state) and return its id.
    Raises BoardNotFound, or ForkError when ``version`` is outside the parent's versions."""
    spec, state, seq, record_hash, state_hash = await _prefix(store, board_id, version)
    if blueprint is not None:
        spec = blueprint.spec.to_json() if isinstance(blueprint, CompiledBlueprint) else dict(blueprint)
    spec["initial_state"] = state
    try:
        compiled = compile_blueprint(spec)
    except ValueError as exc:
        raise ForkError(
            f"the state of board {board_id} at version {version} does not fit the blueprint: {exc}"
        ) from None
    parent: dict[str, JSON] = {
        "board": board_id,
        "version": version,
        "seq": seq,
        "record_hash": record_hash,
        "state_hash": state_hash,
    }
    info = await store.board_info(board_id)
    meta: dict[str, JSON] = {k: v for k, v in info.meta.items() if k != PARENT_KEY}
    meta[PARENT_KEY] = parent
    return await create_board(
        store, compiled, meta=meta, name=f"{compiled.spec.name} (fork of {board_id[:8]}@{version})"
    )


async def verify_fork(store: Store, board_id: str) -> str | None:
    """None for a board that is not a fork; for a fork, a one-line summary once the parent's
    prefix it names replays to the bound record hash and state hash and the child starts from
    that state. Raises ForkError naming what does not match."""
    info = await store.board_info(board_id)
    parent = info.meta.get(PARENT_KEY)
    if parent is None:
        return None
    if not isinstance(parent, dict):
        raise ForkError(f"board {board_id}: its parent binding is not an object")
    pid, version = parent.get("board"), parent.get("version")
    if not isinstance(pid, str) or not isinstance(version, int):
        raise ForkError(f"board {board_id}: its parent binding lacks the parent id or version")
    try:
        _, _, seq, record_hash, state_hash = await _prefix(store, pid, version)
    except ForkError as exc:
        raise ForkError(f"board {board_id}: its parent's prefix does not verify: {exc}") from None
    for key, found in (("seq", seq), ("record_hash", record_hash), ("state_hash", state_hash)):
        if parent.get(key) != found:
            raise ForkError(
                f"board {board_id}: parent {pid} at version {version} has {key} {found!r}, the fork bound {parent.get(key)!r}"
            )
    loaded = await store.load_board(board_id)
    child = compile_blueprint(loaded.blueprint)
    start = replay(child, child.initial_state(), [])
    if start.state_hash != state_hash:
        raise ForkError(f"board {board_id}: its initial state is not the parent's state at version {version}")
    return f"fork of {pid} at version {version} (seq {seq}): parent prefix verified"


def fork_parent(meta: dict[str, JSON] | Any) -> tuple[str, int | None] | None:
    """The parent board id and the version a board was forked at, from its metadata (None for a
    board that is not a fork)."""
    binding = meta.get(PARENT_KEY) if isinstance(meta, dict) else None
    if not isinstance(binding, dict) or not isinstance(binding.get("board"), str):
        return None
    version = binding.get("version")
    return str(binding["board"]), version if isinstance(version, int) and not isinstance(version, bool) else None


def fork_children(boards: Sequence[BoardInfo], board_id: str) -> list[tuple[str, int | None]]:
    """The boards among ``boards`` forked from ``board_id``, oldest first, with the version each
    was taken at."""
    out = []
    for b in sorted(boards, key=lambda b: b.created_at):
        parent = fork_parent(b.meta)
        if parent is not None and parent[0] == board_id:
            out.append((b.board_id, parent[1]))
    return out


def lineage_json(info: BoardInfo, boards: Sequence[BoardInfo]) -> dict[str, JSON]:
    """``{"parent": {"board_id", "version"} | None, "children": [{"board_id", "version"}, ...]}``
    of ``info`` among ``boards`` (the store's boards), as the CLI's ``--json`` outputs give it."""
    parent = fork_parent(info.meta)
    return {
        "parent": None if parent is None else {"board_id": parent[0], "version": parent[1]},
        "children": [{"board_id": b, "version": v} for b, v in fork_children(boards, info.board_id)],
    }


def lineage_line(info: BoardInfo, boards: Sequence[BoardInfo]) -> str | None:
    """One line naming ``info``'s parent (and version) and its forks, or None when it has neither."""
    parts = []
    parent = fork_parent(info.meta)
    if parent is not None:
        parts.append(f"fork of {parent[0]} at version {parent[1]}")
    children = fork_children(boards, info.board_id)
    if children:
        parts.append("forked into " + ", ".join(f"{b} (at version {v})" for b, v in children))
    return "; ".join(parts) or None
