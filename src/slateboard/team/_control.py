"""The coordinator of a blackboard team as a control unit on the step engine, and what a team's
log adds up to.

``TeamControl`` is the component that chooses each round's invocation: the coordinator agent
(or round-robin when there is none) reads the board and answers ``terminate`` / ``next_agent``
/ ``instruction``; the run logs that decision as a ``control`` record whose append also pushes
the chosen agent's invocation onto the board's agenda (``round_invocation``), so the store says
at every moment which turn is due. The step engine then claims and runs it, exactly like a
Runner's step. The unit never changes the board itself.

``Tally`` folds a team's records into its spend (rounds, model calls, tokens): the same function
counts what a run writes and what a resumed run reads back, so a budget sees the same numbers
either way. ``Progress`` is where a logged run stands (for ``Team.resume``).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ..kernel.canonical import JSON
from ..kernel.circuit import HALT, CircuitAction
from ..kernel.record import CONTROL_KIND, EVENT_META, MODEL_META, PROPOSAL_KIND, Record, Usage
from ..models import Model
from ..scheduling.invocation import Invocation
from ..vocabulary import CONTROL_META, COORDINATOR_DECIDED, ONCE_KEY, ROUND_META
from ..workers.llm import SpendHook
from ._agent_call import run_agent
from ._agent_spec import Agent
from ._board import DECIDER_WORKER, SYSTEM_AUTHOR, SYSTEM_WORKER, USER_AUTHOR
from ._coordinate import (
    CoordinatorDecision,
    coordinator_prompt,
    coordinator_schema,
    parse_coordinator_decision,
    round_robin_decision,
)

__all__ = [
    "CONTROL_WORKER",
    "COORDINATOR_DECIDED",
    "DECIDE_INVOCATION",
    "DEFAULT_MAX_REPEATS",
    "Choice",
    "EchoTail",
    "Progress",
    "Tally",
    "TeamControl",
    "decide_invocation",
    "echo_check",
    "round_id",
    "round_invocation",
]

CONTROL_WORKER = "__coordinator"
"""The ``worker`` field of control records."""
DECIDE_INVOCATION = "decide"
"""Id of the decider's invocation."""
DEFAULT_MAX_REPEATS = 5
"""An agent's contributions in a row with the same content before the run halts (``repeat``)."""
_RAW_LOG = 2000
_RAW_META = 300


def round_id(round_num: int) -> str:
    """The invocation id of round ``round_num``'s turn (also the ``invocation`` of its records)."""
    return f"round-{round_num}"


@dataclass(frozen=True, slots=True)
class Choice:
    """One round's decision with what it cost: ``usage`` (component ``coordinator``) and the
    name of the model asked (None for round-robin, which calls no model)."""

    decision: CoordinatorDecision
    usage: Usage
    model: str | None
    spend_settled: str | None = None
    """Set when the coordinator's call was booked at its worst case (no usage reported)."""

    @property
    def reason(self) -> str:
        """The control record's reason (without the round)."""
        d = self.decision
        if d.terminate:
            return "terminate"
        if d.next_agent is None:
            return "no contributor" if d.parsed else "unreadable decision: no contributor"
        return f"next agent: {d.next_agent}"

    def record_meta(self, round_num: int) -> dict[str, JSON]:
        """The control record's ``meta``: the decision, the raw answer, and the model asked."""
        d = self.decision
        meta: dict[str, JSON] = {
            EVENT_META: COORDINATOR_DECIDED,
            ROUND_META: round_num,
            "terminate": d.terminate,
            "next_agent": d.next_agent,
            "instruction": d.instruction,
            "parsed": d.parsed,
            "raw": d.raw[:_RAW_LOG],
        }
        if self.model is not None:
            meta[MODEL_META] = self.model
        if self.spend_settled is not None:
            meta["spend_settled"] = self.spend_settled
        return meta


class TeamControl:
    """Chooses each round's contributor (see the module docstring).

    With a coordinator agent and its model, every round asks the model with the board rendered
    as text (``coordinator_prompt``; the JSON schema of the answer when ``constrain``); a model
    failure or an unreadable answer is the no-op decision (no contributor), never an exception.
    Without one, agent ``(round - 1) mod n`` in configuration order (round-robin).
    """

    def __init__(
        self,
        names: Sequence[str],
        roles: Mapping[str, str],
        *,
        coordinator: Agent | None,
        model: Model | None,
        instructions: str,
        constrain: bool,
    ) -> None:
        self.names = list(names)
        self.roles = dict(roles)
        self.coordinator = coordinator
        self.model = model
        self.instructions = instructions
        self.constrain = constrain
        self.spend: SpendHook | None = None
        """Set by a run with a spend cap: the coordinator's model calls reserve first too."""

    async def choose(self, round_num: int, board: Callable[[], str]) -> Choice:
        """The decision of round ``round_num``; ``board`` renders the board's text, and is called
        only when a coordinator reads it (round-robin reads nothing: rendering the board every
        round would cost O(view budget) for nothing)."""
        if self.coordinator is None or self.model is None:
            return Choice(round_robin_decision(self.names, round_num), Usage(component="coordinator"), None)
        prompt = coordinator_prompt(self.instructions, self.roles, board())
        schema = coordinator_schema(self.names) if self.constrain else None
        reply = await run_agent(self.coordinator, self.model, prompt, json_schema=schema, spend=self.spend)
        usage = dataclasses.replace(reply.usage, component="coordinator")
        if reply.error is not None:
            failed = CoordinatorDecision(False, None, None, f"(coordinator failed: {reply.error})", parsed=False)
            return Choice(failed, usage, self.model.name, reply.spend_settled)
        return Choice(parse_coordinator_decision(reply.text), usage, self.model.name, reply.spend_settled)


def round_invocation(choice: Choice, round_num: int, order: int, *, feedback: str | None = None) -> Invocation:
    """The invocation of the chosen agent's turn in round ``round_num``: its event is the
    coordinator's instruction (the proposal's logged triggering event), and it runs once (a
    rejection is not retried: the next round's decision says who goes next)."""
    d = choice.decision
    assert d.next_agent is not None
    event: dict[str, JSON] = {
        "kind": "coordinator",
        "round": round_num,
        "agent": d.next_agent,
        "instruction": d.instruction,
    }
    meta: dict[str, JSON] = {ONCE_KEY: True, ROUND_META: round_num, CONTROL_META: d.raw[:_RAW_META]}
    return Invocation(round_id(round_num), d.next_agent, 0, order, event, "coordinator", feedback=feedback, meta=meta)


def decide_invocation(rounds: int, order: int) -> Invocation:
    """The decider's invocation, after ``rounds`` rounds."""
    event: dict[str, JSON] = {"kind": "decide", "rounds": rounds}
    return Invocation(
        DECIDE_INVOCATION, DECIDER_WORKER, 0, order, event, "decider", meta={ONCE_KEY: True, "rounds": rounds}
    )


# -- what the log adds up to --------------------------------------------------------------------
@dataclass(slots=True)
class Tally:
    """A team run's spend, folded record by record (``note``): ``rounds`` is the last round
    whose decision was logged, ``calls`` the model calls (every record whose ``meta.model``
    names the model asked: control records of a coordinator, agents' proposals, the decider's),
    ``tokens_in``/``tokens_out`` every record's usage."""

    rounds: int = 0
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    seen: int = 0
    """How many records were noted (a caller folding a growing list resumes from here)."""

    def note(self, rec: Record) -> None:
        """Count one record."""
        self.seen += 1
        self.tokens_in += rec.usage.tokens_in
        self.tokens_out += rec.usage.tokens_out
        if rec.kind in (CONTROL_KIND, PROPOSAL_KIND) and isinstance(rec.meta.get(MODEL_META), str):
            self.calls += 1
        if rec.kind == CONTROL_KIND and rec.meta.get(EVENT_META) == COORDINATOR_DECIDED:
            r = rec.meta.get(ROUND_META)
            if isinstance(r, int):
                self.rounds = max(self.rounds, r)

    def fold(self, records: Sequence[Record]) -> Tally:
        """Note the records after the ``seen`` first ones; returns self."""
        for rec in records[self.seen :]:
            self.note(rec)
        return self


@dataclass(frozen=True, slots=True)
class Progress:
    """Where a logged team run stands: the last round decided (0: none), that round's decision
    (its control record's meta), whether an unknown agent's error entry for it was posted, and
    whether the decider's answer is on the board."""

    rounds: int = 0
    last: dict[str, JSON] = field(default_factory=dict)
    error_posted: bool = True
    decided: bool = False

    @property
    def terminated(self) -> bool:
        """The last decision was to stop."""
        return self.last.get("terminate") is True

    @classmethod
    def of(cls, records: Sequence[Record], answer: JSON) -> Progress:
        """The progress of a team board from its log and its committed answer."""
        rounds = 0
        last: dict[str, JSON] = {}
        posted = True
        for rec in records:
            if rec.kind == CONTROL_KIND and rec.meta.get(EVENT_META) == COORDINATOR_DECIDED:
                r = rec.meta.get(ROUND_META)
                rounds = r if isinstance(r, int) else rounds
                last = dict(rec.meta)
                posted = False
            elif rec.kind == PROPOSAL_KIND and rec.worker == SYSTEM_WORKER:
                posted = True
        return cls(rounds, last, posted, answer is not None)


# -- the classic board's stuck detector ---------------------------------------------------------
def _text(entry: Mapping[str, JSON]) -> str:
    content = entry.get("content")
    return content.strip() if isinstance(content, str) else ""


def _author_key(entry: Mapping[str, JSON]) -> tuple[bool, str]:
    # The schema makes authors strings; anything else is keyed apart so no two authors merge.
    author = entry.get("author")
    return (True, author) if isinstance(author, str) else (False, repr(author))


class EchoTail:
    """The part of a growing public board that ``echo_check`` reads, kept incrementally.

    ``sync(public)`` notes the entries appended since the last call (the board is append-only)
    and returns, in board order, the last ``alternations`` contributions and the last ``repeats``
    contributions of the latest contribution's author: ``echo_check`` of that list is
    ``echo_check`` of the whole board (it reads nothing else), at a cost independent of the
    board's length (O(entries appended since the last call))."""

    def __init__(self, *, repeats: int, alternations: int) -> None:
        self.repeats = max(repeats, 1)
        self.seen = 0
        self.recent: deque[tuple[int, Mapping[str, JSON]]] = deque(maxlen=max(alternations, 1))
        self.mine: dict[tuple[bool, str], deque[tuple[int, Mapping[str, JSON]]]] = {}

    def sync(self, public: Sequence[JSON]) -> list[Mapping[str, JSON]]:
        """The contributions ``echo_check`` reads of ``public`` (see the class docstring)."""
        for pos in range(self.seen, len(public)):
            entry = public[pos]
            if isinstance(entry, dict) and entry.get("author") not in (USER_AUTHOR, SYSTEM_AUTHOR):
                self.recent.append((pos, entry))
                self.mine.setdefault(_author_key(entry), deque(maxlen=self.repeats)).append((pos, entry))
        self.seen = len(public)
        if not self.recent:
            return []
        merged = dict(self.recent)
        merged.update(self.mine[_author_key(self.recent[-1][1])])
        return [merged[pos] for pos in sorted(merged)]


def echo_check(public: Sequence[Mapping[str, JSON]], *, repeats: int, alternations: int) -> CircuitAction | None:
    """The stuck detector of the classic board, for what the circuit policy cannot see there:
    every entry gets a fresh id and timestamp, so a board whose agents only repeat themselves
    never repeats a state. Looks at the agents' public contributions (not the problem, not
    system entries):

    * **repeat**: the latest contribution's author posted the same content (whitespace aside)
      ``repeats`` times in a row (its own contributions; others' in between do not count) ->
      halt;
    * **alternation**: the last ``alternations`` contributions alternate between two agents
      (A-B-A-B...) and each repeats the content its author posted two contributions before ->
      halt.

    ``repeats``/``alternations`` below 2 switch a check off. Pure: the same board gives the
    same action (a ``circuit`` halt, logged like the circuit policy's), or None."""
    posts = [e for e in public if e.get("author") not in (USER_AUTHOR, SYSTEM_AUTHOR)]
    if not posts:
        return None
    author = posts[-1].get("author")
    mine = [e for e in posts if e.get("author") == author][-repeats:] if repeats >= 2 else []
    if len(mine) == repeats and len({_text(e) for e in mine}) == 1:
        ids: list[JSON] = [e.get("id") for e in mine]
        return CircuitAction(
            HALT,
            str(author),
            f"repeat: {author!r} posted the same contribution {repeats} times in a row "
            f"(entries {', '.join(str(i) for i in ids)}, max_repeats={repeats})",
            {"trigger": "repeat", "entries": ids, "max_repeats": repeats},
        )
    tail = posts[-alternations:] if alternations >= 2 else []
    if len(tail) == alternations and alternations >= 4:
        authors = [e.get("author") for e in tail]
        turns = len(set(authors)) == 2 and all(authors[i] != authors[i - 1] for i in range(1, len(authors)))
        if turns and all(_text(tail[i]) == _text(tail[i - 2]) for i in range(2, len(tail))):
            pair = sorted(str(a) for a in set(authors))
            ids = [e.get("id") for e in tail]
            return CircuitAction(
                HALT,
                str(author),
                f"alternation: {pair[0]!r} and {pair[1]!r} repeated each other's last contributions "
                f"{alternations} times in turn (entries {ids[0]}..{ids[-1]}, max_alternations={alternations})",
                {"trigger": "alternation", "workers": list(pair), "entries": ids},
            )
    return None
