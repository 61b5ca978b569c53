"""``slateboard.vocabulary``: one typed home for the words the layers exchange.

Each Literal is paired with a tuple of its values that cannot drift from it, each constant
spells a word of its Literal, no two constants of one Literal spell the same word, and the old
homes (``kernel.record``, ``scheduling.invocation``, ``status``, ``runtime.events``, ``team``,
``stores``) still hand out the same objects, and the decoders of records and invocations refuse
a word their Literal lacks.
"""

from __future__ import annotations

from typing import Any, get_args

import pytest

import slateboard.vocabulary as vocabulary
from slateboard import status
from slateboard.errors import InvalidInput
from slateboard.kernel import record
from slateboard.runtime import events
from slateboard.scheduling import invocation
from slateboard.stores import base
from slateboard.team import _events as team_events

# Each Literal of the vocabulary, its tuple, and how its constants are named.
PAIRS: list[tuple[str, Any, tuple[str, ...], str]] = [
    ("RecordKind", vocabulary.RecordKind, vocabulary.RECORD_KINDS, "_KIND"),
    ("MetaKey", vocabulary.MetaKey, vocabulary.META_KEYS, "_META"),
    ("EventKind", vocabulary.EventKind, vocabulary.EVENT_KINDS, ""),
    ("EndStatus", vocabulary.EndStatus, vocabulary.END_STATUSES, "END_"),
    ("BoardStatus", vocabulary.BoardStatus, vocabulary.BOARD_STATUSES, "BOARD_"),
    ("Outcome", vocabulary.Outcome, vocabulary.OUTCOMES, "OUTCOME_"),
    ("InvocationStatus", vocabulary.InvocationStatus, vocabulary.INVOCATION_STATUSES, "INVOCATION_"),
]


@pytest.mark.parametrize(("name", "literal", "values", "_suffix"), PAIRS, ids=[p[0] for p in PAIRS])
def test_each_tuple_is_its_literal(name: str, literal: Any, values: tuple[str, ...], _suffix: str) -> None:
    assert values == get_args(literal), f"{name} and its tuple differ"
    assert len(set(values)) == len(values), f"{name} names a word twice"


def test_every_word_has_one_constant() -> None:
    constants = {n: v for n, v in vars(vocabulary).items() if n.isupper() and isinstance(v, str)}
    for what, values, named in [
        ("record kind", vocabulary.RECORD_KINDS, [n for n in constants if n.endswith("_KIND")]),
        ("end status", vocabulary.END_STATUSES, [n for n in constants if n.startswith("END_")]),
        ("board status", vocabulary.BOARD_STATUSES, [n for n in constants if n.startswith("BOARD_")]),
        ("outcome", vocabulary.OUTCOMES, [n for n in constants if n.startswith("OUTCOME_")]),
        ("invocation status", vocabulary.INVOCATION_STATUSES, [n for n in constants if n.startswith("INVOCATION_")]),
    ]:
        spelled = [constants[n] for n in named if constants[n] in values]
        assert sorted(spelled) == sorted(values), f"every {what} has exactly one constant"
    event_constants = [v for v in constants.values() if v in vocabulary.EVENT_KINDS]
    assert sorted(event_constants) == sorted(vocabulary.EVENT_KINDS), "every event kind has one constant"


def test_the_public_names_are_all_there() -> None:
    assert sorted(vocabulary.__all__) == sorted(
        n
        for n in vars(vocabulary)
        if not n.startswith("_") and n not in ("annotations", "Final", "Literal", "get_args")
    )


def test_the_old_homes_hand_out_the_same_words() -> None:
    assert record.RecordKind is vocabulary.RecordKind
    assert record.RECORD_KINDS is vocabulary.RECORD_KINDS
    assert (record.PROPOSAL_KIND, record.EVENT_META, record.GENESIS_META) == ("proposal", "event", "genesis")
    assert status.EndStatus is vocabulary.EndStatus
    assert status.END_STATUSES is vocabulary.END_STATUSES
    assert (status.AGENDA_EMPTY, status.INTERRUPTED, status.LOST_WORK) == (
        "agenda_empty",
        "interrupted",
        "; lost work: ",
    )
    assert (events.RUN_ENDED, events.STATE_UPDATE, events.TOKENS) == ("run.ended", "state.update", "model.tokens")
    assert team_events.STARTED == vocabulary.TEAM_STARTED == "blackboard.started"
    assert set(team_events.BLACKBOARD_EVENTS) <= set(vocabulary.EVENT_KINDS)
    assert base.BOARD_STATUSES is vocabulary.BOARD_STATUSES
    assert record.Outcome is vocabulary.Outcome
    assert record.OUTCOMES is vocabulary.OUTCOMES
    assert invocation.InvocationStatus is vocabulary.InvocationStatus
    assert invocation.INVOCATION_STATUSES is vocabulary.INVOCATION_STATUSES
    assert (invocation.PENDING, invocation.CLAIMED, invocation.DONE, invocation.CANCELLED) == (
        vocabulary.INVOCATION_PENDING,
        vocabulary.INVOCATION_CLAIMED,
        vocabulary.INVOCATION_DONE,
        vocabulary.INVOCATION_CANCELLED,
    )


def test_the_decoders_refuse_a_word_outside_the_vocabulary() -> None:
    inv = invocation.Invocation(id="1:1", worker="w", priority=0, order=1)
    assert invocation.Invocation.from_json(inv.to_json()) == inv
    with pytest.raises(InvalidInput, match="invocation status 'waiting'"):
        invocation.Invocation.from_json({**inv.to_json(), "status": "waiting"})
    rec = record.Record(
        seq=1, kind=record.PROPOSAL_KIND, outcome=vocabulary.OUTCOME_NOOP, worker="w", invocation="1:1",
        event=None, view_hash=None, patch=None, stage=None, reason=None, version=0, state_before="",
        state_after="", usage=record.Usage(), prev=record.GENESIS,
    ).sealed()  # fmt: skip
    assert record.Record.from_json(rec.to_json()) == rec
    with pytest.raises(InvalidInput, match="record field 'outcome' is 'skipped'"):
        record.Record.from_json({**rec.to_json(), "outcome": "skipped"})
