"""Distilling a finished board into semantic memory, recalling memory into a board, and
episodic memory (the logs of every board, queried across boards)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import InvalidInput
from ..kernel.canonical import JSON
from ..kernel.pointer import MISSING, Pattern, parse_pointer, resolve
from ..kernel.record import Record, Usage
from ..stores.base import Store
from ..vocabulary import BOARD_DONE, BOARD_FAILED, OUTCOME_ACCEPTED, PROPOSAL_KIND
from ..workers.base import Feedback, WorkerReply
from ._model import NewFact
from ._store import FactStore

if TYPE_CHECKING:
    from ..views import View

__all__ = ["Distiller", "Episode", "RecallWorker", "distill_board", "episodes", "facts_from_records"]

Distiller = Callable[[Sequence[Record], JSON], Sequence[NewFact]]
"""``distiller(records, final_state) -> facts``: a function that turns a finished board's log
and final state into facts (with provenance)."""

_ENDED = (BOARD_DONE, BOARD_FAILED)


def _text(value: JSON) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("text", "content", "fact", "claim"):
            found = value.get(key)
            if isinstance(found, str):
                return found
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _region(quarantine: str | Pattern | None) -> tuple[str, ...] | None:
    """The literal root of a quarantine region (its tokens up to the first wildcard)."""
    if quarantine is None:
        return None
    pattern = quarantine if isinstance(quarantine, Pattern) else Pattern.parse(quarantine)
    base: list[str] = []
    for token in pattern.tokens:
        if token in ("*", "**", "-"):
            break
        base.append(token)
    return tuple(base) or None


def _without(value: JSON, rest: tuple[str, ...]) -> JSON:
    """``value`` with the node at ``rest`` (relative tokens) cut out."""
    if not rest:
        return None
    if isinstance(value, dict) and rest[0] in value:
        if len(rest) == 1:
            return {k: v for k, v in value.items() if k != rest[0]}
        return {**value, rest[0]: _without(value[rest[0]], rest[1:])}
    if isinstance(value, list) and rest[0].isdigit() and int(rest[0]) < len(value):
        i = int(rest[0])
        if len(rest) == 1:
            return value[:i] + value[i + 1 :]
        return [*value[:i], _without(value[i], rest[1:]), *value[i + 1 :]]
    return value


def facts_from_records(
    board_id: str, records: Sequence[Record], paths: Sequence[str], *, quarantine: str | Pattern | None = None
) -> list[NewFact]:
    """The default distiller: every value an accepted proposal added or replaced at a path
    matching one of ``paths`` (contract patterns: ``*`` one segment, ``-`` an append), as a fact
    whose provenance is the board, the record's seq and its worker. A dict value contributes its
    ``text``/``content``/``fact``/``claim`` string, else its canonical JSON.

    Nothing written into the ``quarantine`` region (the blueprint's) becomes a fact, whatever
    ``paths`` say (``/**`` included), and a value written above it loses the region first: text
    an untrusted worker wrote enters memory only once a sanitiser released it elsewhere."""
    region = _region(quarantine)
    patterns = [Pattern.parse(p) for p in paths]
    out: list[NewFact] = []
    for rec in records:
        if rec.kind != PROPOSAL_KIND or rec.outcome != OUTCOME_ACCEPTED or not rec.patch:
            continue
        ops = orjson.loads(rec.patch)
        for op in ops if isinstance(ops, list) else []:
            if not isinstance(op, dict) or op.get("op") not in ("add", "replace") or "value" not in op:
                continue
            tokens = parse_pointer(str(op.get("path", "")))
            value: JSON = op["value"]
            if region is not None:
                if tuple(tokens[: len(region)]) == region:
                    continue  # inside the quarantine region: never released text
                if tuple(region[: len(tokens)]) == tuple(tokens):
                    value = _without(value, region[len(tokens) :])
            if any(p.match(tokens) is not None for p in patterns):
                out.append(NewFact(_text(value), board_id, rec.seq, rec.worker, {"path": op["path"]}))
    return out


async def distill_board(
    store: Store,
    board_id: str,
    memory: FactStore,
    *,
    paths: Sequence[str] = (),
    distiller: Distiller | None = None,
    now: float | None = None,
) -> list[int]:
    """Write the distilled facts of ended board ``board_id`` into ``memory``; their ids.

    ``distiller`` (records, final state without the quarantine region) -> facts, or by default
    ``facts_from_records`` over ``paths`` (never the quarantine region). Idempotent: a fact whose text this board already contributed is not written
    again. Raises ValueError while the board has not ended (its facts are not final)."""
    from ..runtime import board_result

    info = await store.board_info(board_id)
    if info.status not in _ENDED:
        raise InvalidInput(f"board {board_id} has not ended (status {info.status}): distil it when it is done")
    from ..blueprint import compile_blueprint

    records = await store.read_records(board_id)
    quarantine = compile_blueprint((await store.load_board(board_id)).blueprint).quarantine
    region = _region(quarantine)
    if distiller is not None:
        state = (await board_result(store, board_id)).state
        # the final state as a reader outside the quarantine region sees it
        drafts = list(distiller(records, _without(state, region) if region else state))
    else:
        drafts = facts_from_records(board_id, records, paths, quarantine=quarantine)
    known = {f.text for f in await memory.facts(board=board_id)}
    fresh: list[NewFact] = []
    for d in drafts:
        if d.text not in known:
            known.add(d.text)
            fresh.append(d)
    return await memory.add(fresh, now=now) if fresh else []


class RecallWorker:
    """A worker that retrieves facts from semantic memory into the board.

    It reads the query text at ``query`` in its view and proposes ``add`` of the ``k`` best facts
    (text and provenance: board, record seq, worker) at ``into``, bounded to ``max_chars`` of
    JSON. The proposal is decided and logged like any other, with the query, the fact ids and
    their scores in the record's meta: what entered the board from memory is in the log, so the
    board replays without the memory store."""

    kind = "memory_recall"

    def __init__(
        self,
        name: str,
        memory: FactStore,
        *,
        query: str = "/question",
        into: str = "/memory",
        k: int = 5,
        max_chars: int = 2000,
    ) -> None:
        self._name = name
        self.memory = memory
        self.query = query
        self.into = into
        self.k = k
        self.max_chars = max_chars

    @property
    def name(self) -> str:
        """The blueprint worker this proposes for."""
        return self._name

    async def propose(self, view: View, event: JSON = None, *, feedback: Feedback = None) -> WorkerReply:
        """Search memory with the view's query text and propose the retrieved section."""
        text = _lookup(view.data, self.query)
        diagnostics: dict[str, JSON] = {"kind": self.kind}
        if not isinstance(text, str) or not text.strip():
            diagnostics["error"] = f"no query text at {self.query} in the view"
            return WorkerReply("", Usage(component="memory"), diagnostics=diagnostics)
        found = await self.memory.search(text, k=self.k)
        section: list[JSON] = []
        used = 2
        for fact in found:
            item = fact.to_json()
            size = len(orjson.dumps(item)) + 1
            if used + size > self.max_chars:
                break  # the section stays inside its budget: lower-ranked facts are left out
            section.append(item)
            used += size
        diagnostics.update(
            {
                "memory_query": text,
                "memory_facts": [f.id for f in found[: len(section)]],
                "memory_scores": [round(f.score, 6) for f in found[: len(section)]],
            }
        )
        return WorkerReply(
            [{"op": "add", "path": self.into, "value": section}], Usage(component="memory"), diagnostics=diagnostics
        )


def _lookup(data: dict[str, JSON], pointer: str) -> JSON:
    """The value at ``pointer`` in a view's data, which holds values by pointer: the pointer
    itself, or a shown ancestor (e.g. the whole root) descended into."""
    if pointer in data:
        return data[pointer]
    tokens = parse_pointer(pointer)
    for key, value in data.items():
        prefix = parse_pointer(key)
        if len(prefix) < len(tokens) and tokens[: len(prefix)] == prefix:
            found = resolve(value, tokens[len(prefix) :])
            if found is not MISSING:
                return found
    return None


@dataclass(frozen=True, slots=True)
class Episode:
    """One logged record of one board: episodic memory."""

    board: str
    record: Record

    def to_json(self) -> dict[str, Any]:
        """The board id with the record's fields."""
        return {"board": self.board, **self.record.to_json()}


async def episodes(
    store: Store,
    *,
    text: str | None = None,
    worker: str | None = None,
    outcome: str | None = None,
    kind: str | None = "proposal",
    boards: Sequence[str] | None = None,
    limit: int = 100,
) -> list[Episode]:
    """Records across boards (all of the store's, or ``boards``) matching every filter given:
    ``text`` (case-insensitive, in the patch or the reason), ``worker``, ``outcome``, ``kind``;
    newest boards first, at most ``limit``."""
    ids = list(boards) if boards is not None else [b.board_id for b in await store.list_boards()]
    needle = text.lower() if text else None
    out: list[Episode] = []
    for board in ids:
        for rec in await store.read_records(board):
            if kind is not None and rec.kind != kind:
                continue
            if worker is not None and rec.worker != worker:
                continue
            if outcome is not None and rec.outcome != outcome:
                continue
            if needle is not None and needle not in f"{rec.patch or ''}\n{rec.reason or ''}".lower():
                continue
            out.append(Episode(board, rec))
            if len(out) >= limit:
                return out
    return out
