"""The view a worker saw, rebuilt for the dashboard from the blueprint and the replayed state.

The log keeps only a view's hash, not the view: it is built again with the view builder from the
blueprint and the state at the version the worker viewed, trying the inputs the runner could
have used (recent rejections, a tightened budget, expanded handles), and always shown together
with whether its hash equals the ``view_hash`` the log kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..kernel.canonical import JSON
from ..kernel.record import Record
from ..stores.base import BoardInfo
from ..vocabulary import CIRCUIT_KIND, OUTCOME_REJECTED, PROPOSAL_KIND, RUN_KIND
from ._replay import BoardLog, State, StateCache
from ._shapes import ApiError

if TYPE_CHECKING:
    from ..views import View

_VIEW_CANDIDATES = 48
_HASH_CHARS = frozenset("0123456789abcdef")


def check_view_hash(view_hash: str) -> None:
    """ApiError 400 unless ``view_hash`` is 64 lowercase hex characters."""
    if len(view_hash) != 64 or not set(view_hash) <= _HASH_CHARS:
        raise ApiError(400, f"a view hash is 64 lowercase hex characters, got {view_hash[:80]!r}")


def view_json(info: BoardInfo, entry: BoardLog, states: StateCache, view_hash: str, seq: int | None) -> dict[str, JSON]:
    """The view whose hash the log keeps as ``view_hash``, rebuilt (see ``rebuild_view``); ``seq``
    picks which record's inputs to use when several proposals saw the same view. ApiError 404
    when no record (or not record ``seq``) saw it."""
    board_id = info.board_id
    seen = [r for r in entry.records if r.view_hash == view_hash]
    if not seen:
        raise ApiError(404, f"no record of board {board_id} has view hash {view_hash[:12]}…")
    if seq is not None:
        chosen = next((r for r in seen if r.seq == seq), None)
        if chosen is None:
            raise ApiError(404, f"record {seq} of board {board_id} did not see view {view_hash[:12]}…")
    else:
        chosen = seen[0]
    out: dict[str, JSON] = {
        "board_id": info.board_id,
        "hash": view_hash,
        "records": [r.seq for r in seen],
        "seq": chosen.seq,
        "worker": chosen.worker,
    }
    out.update(rebuild_view(entry, chosen, states))
    return out


def rebuild_view(entry: BoardLog, rec: Record, states: StateCache) -> dict[str, JSON]:
    """Rebuild ``rec``'s view: try the inputs the runner could have used, first match wins."""
    from ..views import build_view

    worker = rec.worker
    if worker is None or worker not in entry.compiled.workers:
        return {"matches": False, "problem": f"worker {worker!r} is not in the board's blueprint", "view": None}
    viewed = rec.meta.get("viewed_version")
    if not isinstance(viewed, int) or isinstance(viewed, bool):
        viewed = rec.version - 1 if rec.accepted else rec.version
    st = states.at(entry, viewed)
    first: tuple[View, dict[str, JSON]] | None = None
    for inputs in view_inputs(entry.records, rec, viewed, st.seq):
        try:
            view = build_view(
                entry.compiled,
                worker,
                st.state,
                viewed,
                event=rec.event,
                rejections=inputs.rejections,
                expand=inputs.expand,
                budget=inputs.budget,
            )
        except (KeyError, ValueError) as exc:
            return {"matches": False, "problem": f"the view cannot be rebuilt: {exc}", "view": None}
        if first is None:
            first = (view, inputs.to_json())
        if view.hash == rec.view_hash:
            return view_out(view, inputs.to_json(), True, st)
    assert first is not None
    return view_out(first[0], first[1], False, st)


@dataclass(frozen=True, slots=True)
class ViewInputs:
    """One guess at what a view was built with: the worker's recent rejections, the view budget
    in force and the handles it asked to expand."""

    rejections: tuple[Record, ...]
    budget: int | None
    expand: tuple[str, ...]

    def to_json(self) -> dict[str, JSON]:
        """The guess as the API shows it (rejections by seq)."""
        return {"rejections": [r.seq for r in self.rejections], "budget": self.budget, "expand": list(self.expand)}


def view_inputs(records: Sequence[Record], rec: Record, viewed: int, viewed_end: int) -> list[ViewInputs]:
    """The inputs the runner may have built ``rec``'s view with, most likely first.

    The view was built when the log held some prefix of ``L`` records, with the state at
    ``viewed``: ``L`` lies between the record that produced ``viewed`` and ``rec`` (in parallel
    mode other records may land in between). From that prefix come the worker's recent
    rejections, the view budget a circuit ``tighten_budget`` action set in the same run (a
    ``run`` record ends a run, and the next run starts without them), and the handles the
    worker's previous proposal asked to expand. One pass over the log.
    """
    worker = rec.worker
    low = next((i + 1 for i in range(viewed_end - 1, -1, -1) if records[i].accepted), 0)
    high = max(low, min(rec.seq - 1, viewed_end))
    rejections: list[Record] = []
    budget: int | None = None
    expand: tuple[str, ...] = ()
    by_end: list[tuple[tuple[Record, ...], int | None, tuple[str, ...]]] = []
    if low == 0:
        by_end.append(((), None, ()))
    for i, r in enumerate(records[:high]):
        if r.kind == RUN_KIND:
            budget, expand = None, ()
        elif r.kind == CIRCUIT_KIND and r.meta.get("worker") == worker and r.meta.get("action") == "tighten_budget":
            details = r.meta.get("details")
            value = details.get("view_budget") if isinstance(details, dict) else None
            if isinstance(value, int) and not isinstance(value, bool):
                budget = value
        elif r.kind == PROPOSAL_KIND and r.worker == worker:
            raw = r.meta.get("expand")
            expand = tuple(h for h in raw if isinstance(h, str)) if isinstance(raw, list) else ()
        if r.outcome == OUTCOME_REJECTED and r.worker == worker:
            rejections.append(r)
        elif r.accepted and r.worker == worker and r.kind == PROPOSAL_KIND:
            rejections = []  # as runtime.accounting: an accepted proposal clears them
        if i + 1 >= low:
            by_end.append((tuple(rejections[-3:]), budget, expand))
    out: list[ViewInputs] = []
    seen: set[tuple[tuple[int, ...], int | None, tuple[str, ...]]] = set()
    for rejected, limit, handles in reversed(by_end):
        for variant in ((limit, handles), (limit, ()), (None, handles), (None, ())):
            key = (tuple(r.seq for r in rejected), *variant)
            if key not in seen and len(out) < _VIEW_CANDIDATES:
                seen.add(key)
                out.append(ViewInputs(rejected, *variant))
    return out or [ViewInputs((), None, ())]


def view_out(view: View, inputs: dict[str, JSON], matches: bool, st: State) -> dict[str, JSON]:
    out: dict[str, JSON] = {
        "matches": matches,
        "rebuilt_hash": view.hash,
        "version": view.version,
        "state_hash": st.state_hash,
        "inputs": inputs,
        "view": view.to_json(),
        "text": view.render(),
    }
    if not matches:
        out["problem"] = (
            "the rebuilt view's hash differs from the logged one: the view depended on something "
            "the log does not keep (for example a resumed run's rejection history)"
        )
    return out
