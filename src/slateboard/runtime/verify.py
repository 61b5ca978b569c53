"""Verify a stored board from Python: the same checks as ``slateboard replay --verify``.

``kernel.replay.replay`` checks a log against the blueprint and initial state it is given; a
caller who passes another one (the blueprint ``Board.build()`` compiled, when the board was
created with inputs, or an edited copy) gets a genesis mismatch that is about its arguments, not
the log. ``verify_board`` takes both from the store, as the CLI does, so there is one right way.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..kernel.canonical import hash_json
from ..kernel.record import Record, board_genesis_problem
from ..kernel.replay import ReplayReport, replay
from ..stores.base import BoardNotFound, LoadedBoard, Store
from .fork import ForkError, verify_fork
from .subboards import SUBBOARDS_META

__all__ = ["replay_stored", "snapshot_problem", "subboards_problem", "verify_board"]

MAX_CHILD_DEPTH = 16
"""Deepest chain of bound children ``verify_board`` follows (accepted blueprints nest at most 8)."""


def replay_stored(loaded: LoadedBoard, records: list[Record], *, revalidate: bool = False) -> ReplayReport:
    """Replay ``records`` against the blueprint and initial state stored with the board (the
    blueprint compiled again from its stored JSON). Raises BlueprintError when the stored
    blueprint is no longer accepted."""
    from ..blueprint.compile import compile_blueprint

    blueprint = compile_blueprint(loaded.blueprint, source_label=f"stored with board {loaded.board_id}")
    return replay(blueprint, loaded.initial_state, records, revalidate=revalidate)


def snapshot_problem(loaded: LoadedBoard, records: list[Record]) -> str | None:
    """Why the board's stored snapshot is not the state its log reaches at the snapshot's seq,
    or None (no snapshot, or it matches)."""
    from ..kernel.statehash import state_hash

    snap = loaded.snapshot
    if snap is None:
        return None
    if not 1 <= snap.seq <= len(records):
        return f"the snapshot is at record {snap.seq}, outside the log (1..{len(records)})"
    rec = records[snap.seq - 1]
    if rec.hash != snap.last_hash or rec.version != snap.version or rec.state_after != snap.state_hash:
        return f"the snapshot at record {snap.seq} does not match that record"
    if state_hash(snap.state) != snap.state_hash:
        return f"the snapshot at record {snap.seq} holds a state whose hash differs from the log's"
    return None


async def subboards_problem(
    store: Store, records: list[Record], *, revalidate: bool = False, inside: tuple[str, ...] = ()
) -> tuple[int, str] | None:
    """(the record, why) when a child board a record binds (``runtime.subboards.SUBBOARDS_META``:
    a sub-board worker's proposal) does not check out, else None: the child must exist, its
    stored blueprint hash to the bound digest, its record at the bound seq carry the bound hash,
    and the child verify whole (``verify_board``, its own children included). So editing a
    child's log, or swapping its blueprint, fails the parent's check. ``inside`` is the chain of
    boards being verified (a board bound inside itself is a problem, never a loop)."""
    for rec in records:
        bound = rec.meta.get(SUBBOARDS_META)
        if not isinstance(bound, list):
            continue
        for entry in bound:
            child = entry.get("board") if isinstance(entry, dict) else None
            if not isinstance(entry, dict) or not isinstance(child, str):
                return rec.seq, f"sub-board binding {entry!r} is malformed"
            why = await _child_problem(store, child, entry, revalidate, inside)
            if why is not None:
                return rec.seq, f"sub-board {child}: {why}"
    return None


async def _child_problem(
    store: Store, child: str, entry: dict[str, Any], revalidate: bool, inside: tuple[str, ...]
) -> str | None:
    if child in inside or len(inside) >= MAX_CHILD_DEPTH:
        return "bound inside itself" if child in inside else f"nests deeper than {MAX_CHILD_DEPTH} boards"
    try:
        loaded = await store.load_board(child)
        info = await store.board_info(child)
    except BoardNotFound:
        return "no such board in this store"
    if hash_json(loaded.blueprint) != entry.get("digest"):
        return "its stored blueprint is not the one the parent bound (digest differs)"
    seq = entry.get("seq")
    if not isinstance(seq, int) or not 0 <= seq <= info.seq:
        return f"the bound record {seq!r} is not in its log (1..{info.seq})"
    if seq:
        (rec,) = await store.read_records(child, seq, limit=1)
        if rec.hash != entry.get("head"):
            return f"its record {seq} is not the one the parent bound (hash differs)"
    report = await verify_board(store, child, revalidate=revalidate, _inside=(*inside, child))
    if not report.ok:
        return f"does not verify at record {report.bad_seq}: {report.problem}"
    return None


async def verify_board(
    store: Store, board_id: str, *, revalidate: bool = False, _inside: tuple[str, ...] = ()
) -> ReplayReport:
    """Check a stored board end to end: the genesis binding of its stored blueprint and initial
    state (record 0), its whole hash chain replayed through the kernel (``revalidate``: every
    accepted patch decided again), its snapshot, for a fork the parent's prefix it names, and
    every child board its records bind (``subboards_problem``).
    Returns the report (``ok``; else ``bad_seq`` and ``problem``); raises BoardNotFound for an
    unknown board. Nothing is written."""
    info = await store.board_info(board_id)
    loaded = await store.load_board(board_id)
    records = list(await store.read_records(board_id)) if info.seq else []
    bound = board_genesis_problem(info.meta, loaded.blueprint, loaded.initial_state)
    if bound is not None:
        return ReplayReport(False, 0, 0, None, "", 0, f"genesis: {bound}")
    report = replay_stored(loaded, records, revalidate=revalidate)
    if not report.ok:
        return report
    snap = snapshot_problem(loaded, records)
    if snap is not None:
        return replace(report, ok=False, bad_seq=loaded.snapshot.seq if loaded.snapshot else None, problem=snap)
    try:
        await verify_fork(store, board_id)
    except ForkError as exc:
        return replace(report, ok=False, bad_seq=0, problem=f"fork: {exc}")
    children = await subboards_problem(store, records, revalidate=revalidate, inside=_inside or (board_id,))
    if children is not None:
        return replace(report, ok=False, bad_seq=children[0], problem=children[1])
    return report
