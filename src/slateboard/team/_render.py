"""The board as the text of a prompt: what a bounded view shows of it, rendered line by line.

A view may shorten or leave out entries (its character budget); the functions here turn what it
shows into lines (``<id> [<kind>] <author>: <content>``), summary lines and counts of entries not
shown, with the problem statement pinned first, and ask for a typed reply when an agent has an
``output_type``. Deterministic in their inputs: the same view gives the same prompt text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..blueprint.output_type import OutputType
from ..kernel.pointer import is_array_index
from ..views import View
from ..workers.base import Feedback, feedback_lines
from ._board import PROBLEM_ID, USER_AUTHOR

__all__ = ["BoardShown", "Shown", "bounded_board", "render_board", "typed_instructions"]


Shown = Mapping[str, Any] | str
"""A board entry to render, or an already rendered line (a summary of an entry not shown)."""


def _index_of(path: str | None, prefix: str) -> int | None:
    if path is None or not path.startswith(prefix):
        return None
    rest = path[len(prefix) :]
    return int(rest) if is_array_index(rest) else None


def _range_start(handle_id: str) -> int | None:
    """``a`` of a range handle id ``[a:b]``, else None."""
    if not (handle_id.startswith("[") and handle_id.endswith("]")):
        return None
    start = handle_id[1:-1].split(":", 1)[0]
    return int(start) if start.isdigit() else None


def _shown_at(view: View, pointer: str) -> tuple[list[Shown], int]:
    """What the view shows of the entry array at ``pointer``, in board order: whole entries, and
    for entries the budget left out a summary line (``<id> … <start of the entry>``); plus how
    many entries are only covered by range handles (not shown at all)."""
    shown, hidden, _first = _shown_with_first(view, pointer)
    return shown, hidden


def _shown_with_first(view: View, pointer: str) -> tuple[list[Shown], int, bool]:
    """``_shown_at`` plus whether the array's first item (the problem, on the public board) is
    shown whole."""
    return _shown_arrays(view, (pointer,))[pointer]


def _shown_arrays(view: View, pointers: Sequence[str]) -> dict[str, tuple[list[Shown], int, bool]]:
    """``_shown_with_first`` for several arrays, in one pass over the view's pointers (hundreds
    per prompt): an item of an array is a key ``"<pointer>/<index>"`` (the view's pointers are
    canonical: no leading zeros)."""
    data = view.data
    found: dict[str, list[tuple[int, Shown]]] = {p: [] for p in pointers}
    for pointer, items in found.items():
        whole = data.get(pointer)
        if isinstance(whole, list):
            items.extend((i, e) for i, e in enumerate(whole) if isinstance(e, dict))
    for key, value in data.items():
        head, _, tail = key.rpartition("/")
        into = found.get(head)
        if into is not None and tail.isdigit() and isinstance(value, dict):
            into.append((int(tail), value))
    first = {p: any(i == 0 for i, _ in items) for p, items in found.items()}
    hidden = dict.fromkeys(pointers, 0)
    for h in view.handles:
        into = found.get(h.pointer)
        if into is None:
            continue
        index = _index_of(h.path, h.pointer + "/")
        if index is None:
            hidden[h.pointer] += h.items or 0
        else:
            into.append((index, f"{h.id} (shortened) {h.summary or ''}"))
    out: dict[str, tuple[list[Shown], int, bool]] = {}
    for pointer, items in found.items():
        items.sort(key=lambda kv: kv[0])
        out[pointer] = ([item for _, item in items], hidden[pointer], first[pointer])
    return out


@dataclass(frozen=True, slots=True)
class BoardShown:
    """The public board as one view shows it: ``public`` items in board order (entries, or
    summary lines of shortened ones), ``hidden`` entries covered by range handles only,
    ``problem`` the pinned problem statement to show first when the view does not show the
    problem entry whole (None when it does, or when the view has no pinned ``/task``)."""

    public: list[Shown]
    hidden: int
    problem: str | None

    @property
    def complete(self) -> bool:
        """True when every public entry is shown whole (nothing shortened, hidden or pinned)."""
        return not self.hidden and self.problem is None and not any(isinstance(e, str) for e in self.public)


def _public_shown(view: View, shown: tuple[list[Shown], int, bool] | None = None) -> BoardShown:
    """The public board of ``view`` with the problem statement pinned: when the budget cut or
    shortened the first entry (the problem), the pinned ``/task`` stands in for it, so every
    prompt built from a view states the problem whatever the board's size. ``shown`` is
    ``_shown_with_first(view, "/public")`` when the caller has it already."""
    public, hidden, first_whole = shown if shown is not None else _shown_with_first(view, "/public")
    task = view.data.get("/task")
    if first_whole or not isinstance(task, str):
        return BoardShown(public, hidden, None)
    if public and isinstance(public[0], str) and public[0].startswith(f"{PROBLEM_ID} (shortened)"):
        public = public[1:]  # its summary is replaced by the whole pinned problem
    elif hidden and any(h.pointer == "/public" and _range_start(h.id) == 0 for h in view.handles):
        hidden -= 1  # the problem is the first of the range's entries
    return BoardShown(public, hidden, task)


def _entries_only(shown: Sequence[Shown]) -> list[dict[str, Any]]:
    return [dict(e) for e in shown if not isinstance(e, str)]


def _line(entry: Shown, private: bool = False) -> str:
    if isinstance(entry, str):
        return entry
    kind = entry.get("kind", "contribution")
    refs = entry.get("references") or []
    tail = f" (refs: {', '.join(str(r) for r in refs)})" if refs else ""
    if private:
        return f"{entry.get('id', '?')} [private:{kind}] {entry.get('content', '')}{tail}"
    return f"{entry.get('id', '?')} [{kind}] {entry.get('author', '?')}: {entry.get('content', '')}{tail}"


def render_board(
    public: Sequence[Shown],
    private: Sequence[Shown] = (),
    *,
    hidden_public: int = 0,
    hidden_private: int = 0,
    problem: str | None = None,
) -> str:
    """The board as text: every public entry, then the reader's own private notes, or
    ``(empty)``. One line per entry: ``<id> [<kind>] <author>: <content>``; string items are
    lines already rendered (summaries of entries a bounded view shortened). ``problem`` (the
    pinned problem statement of a view that cut the problem entry) comes first, as that entry's
    line, then the count of entries not shown."""
    parts: list[str] = []
    lines = [_line(e) for e in public]
    if hidden_public:
        lines.insert(0, f"({hidden_public} earlier entries not shown)")
    if problem is not None:
        lines.insert(0, _problem_line(problem))
    if lines:
        parts.append("=== Public board ===\n" + "\n".join(lines))
    notes = [_line(e, private=True) for e in private]
    if hidden_private:
        notes.insert(0, f"({hidden_private} earlier notes not shown)")
    if notes:
        parts.append("=== Your private notes ===\n" + "\n".join(notes))
    return "\n\n".join(parts) if parts else "(empty)"


def _problem_line(problem: str) -> str:
    return f"{PROBLEM_ID} [problem] {USER_AUTHOR}: {problem}"


def bounded_board(public: Sequence[Mapping[str, Any]], budget: int) -> str:
    """The public board as text within ``budget`` characters plus the problem: the first entry
    (the problem statement) always whole, then the newest entries that fit, newest kept, and a
    line counting the earlier entries left out with their id range (their handles). Same line
    format as ``render_board``; equal to ``render_board(public)`` when that fits the budget.

    Cost: O(entries shown), independent of the board's length. This is the coordinator's
    digest, bounded like every worker's view (issue 15)."""
    if not public:
        return "(empty)"
    head = _line(public[0])
    lines: list[str] = []
    used = 0
    index = len(public) - 1
    while index >= 1:
        line = _line(public[index])
        if used + len(line) + 1 > budget:
            break
        lines.append(line)
        used += len(line) + 1
        index -= 1
    if index >= 1:
        first, last = public[1].get("id", "?"), public[index].get("id", "?")
        lines.append(f"({index} earlier entries not shown: {first} to {last})")
    lines.append(head)
    lines.reverse()
    return "=== Public board ===\n" + "\n".join(lines)


# -- typed replies --------------------------------------------------------------------------------
def typed_instructions(output: OutputType[Any]) -> str:
    """The prompt lines asking for a typed reply: the schema itself, for providers that do not
    constrain decoding (those that do get the same schema as ``json_schema``)."""
    schema = json.dumps(output.schema, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return f"Reply with only one JSON value that matches this JSON Schema:\n{schema}"


def _refused(view: View | None, feedback: Feedback) -> str:
    lines = feedback_lines(view, feedback)
    return ("\n\nYour previous reply was refused: " + "; ".join(lines)) if lines else ""
