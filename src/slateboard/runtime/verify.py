"""Verify a stored board from Python: the same checks as ``slateboard replay --verify``.

``kernel.replay.replay`` checks a log against the blueprint and initial state it is given; a
caller who passes another one (the blueprint ``Board.build()`` compiled, when the board was
created with inputs, or an edited copy) gets a genesis mismatch that is about its arguments, not
the log. ``verify_board`` takes both from the store, as the CLI does, so there is one right way.
"""

from __future__ import annotations

from dataclasses import replace

from ..kernel.record import Record, board_genesis_problem
from ..kernel.replay import ReplayReport, replay
from ..stores.base import LoadedBoard, Store
from .fork import ForkError, verify_fork

__all__ = ["replay_stored", "snapshot_problem", "verify_board"]


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


async def verify_board(store: Store, board_id: str, *, revalidate: bool = False) -> ReplayReport:
    """Check a stored board end to end: the genesis binding of its stored blueprint and initial
    state (record 0), its whole hash chain replayed through the kernel (``revalidate``: every
    accepted patch decided again), its snapshot, and for a fork the parent's prefix it names.
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
    return report
