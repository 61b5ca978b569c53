"""Teams for the engine tests, importable by reference (``engine_teams:pair``) in this process
and in worker subprocesses (this directory on their path).

Their models answer from what they are shown, never from how often they were called, so every
process that rebuilds a team plays the same rounds: the coordinator of ``pair`` counts the
contributions on the board (``a``, ``b``, ``a``, then terminate), each agent writes the number
of its contribution, and the decider counts them. Every call first sleeps
$SLATEBOARD_TEAM_LATENCY_MS (default 0), so a test can kill or cancel a worker mid-round.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from slateboard.models import Generation, GenerationUsage, Message
from slateboard.stores.base import Store
from slateboard.team import Agent, Team

NOON = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
CONTRIBUTION = re.compile(r"^e\d+ \[contribution\] ", re.MULTILINE)
ROUNDS = 3  # the coordinator terminates after this many contributions


def noon() -> datetime:
    """A constant clock: entries are stamped the same in every process."""
    return NOON


def contributions(messages: Sequence[Message]) -> int:
    """How many contributions the board shown in ``messages`` holds."""
    return len(CONTRIBUTION.findall("\n".join(m.content for m in messages if m.role == "user")))


class BoardModel:
    """A Model answering ``reply(messages)`` after $SLATEBOARD_TEAM_LATENCY_MS."""

    def __init__(self, name: str, reply: Callable[[Sequence[Message]], str]) -> None:
        self._name = name
        self.reply = reply

    @property
    def name(self) -> str:
        """The model string."""
        return self._name

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
        timeout: float | None = None,
    ) -> Generation:
        """Sleep, then reply."""
        await asyncio.sleep(float(os.environ.get("SLATEBOARD_TEAM_LATENCY_MS") or 0) / 1000.0)
        text = self.reply(messages)
        return Generation(
            text=text,
            usage=GenerationUsage.estimate(messages, text),
            finish_reason="stop",
            model=self._name,
            latency_s=0.0,
        )


def coordinate(messages: Sequence[Message]) -> str:
    n = contributions(messages)
    if n >= ROUNDS:
        return json.dumps({"terminate": True, "next_agent": None, "instruction": None})
    return json.dumps({"terminate": False, "next_agent": "ab"[n % 2], "instruction": f"Add note {n + 1}."})


def pair(store: Store | str | None = None) -> Team:
    """Agents ``a`` and ``b`` led by a coordinator, then a decider: 4 rounds (3 turns, then the
    coordinator terminates)."""
    return Team.blackboard(
        {
            "a": Agent("Add a note.", model=BoardModel("notes-a", lambda m: f"note {contributions(m) + 1} by a")),
            "b": Agent("Add a note.", model=BoardModel("notes-b", lambda m: f"note {contributions(m) + 1} by b")),
        },
        coordinator=Agent("Pick who writes next.", model=BoardModel("lead", coordinate)),
        decider=Agent("Count the notes.", model=BoardModel("count", lambda m: f"{contributions(m)} notes")),
        max_rounds=6,
        clock=noon,
        store=store,
    )


def held(store: Store | str | None = None) -> Team:
    """One agent, two rounds, every public entry held for a person's approval (no callable)."""
    return Team.blackboard(
        {"a": Agent("Add a note.", model=BoardModel("notes-a", lambda m: f"note {contributions(m) + 1} by a"))},
        decider=Agent("Count the notes.", model=BoardModel("count", lambda m: f"{contributions(m)} notes")),
        max_rounds=2,
        clock=noon,
        approval_paths=["/public/*"],
        store=store,
    )


def parallel(store: Store | str | None = None) -> Team:
    """Agents ``a`` and ``b`` each take a turn every round, from the same board (two rounds)."""
    return Team.blackboard(
        {
            "a": Agent("Add a note.", model=BoardModel("notes-a", lambda m: f"note {contributions(m) + 1} by a")),
            "b": Agent("Add a note.", model=BoardModel("notes-b", lambda m: f"note {contributions(m) + 1} by b")),
        },
        decider=Agent("Count the notes.", model=BoardModel("count", lambda m: f"{contributions(m)} notes")),
        max_rounds=2,
        parallel=True,
        clock=noon,
        store=store,
    )


PAIR = pair()
"""The same team as a module-level object (``engine_teams:PAIR``)."""

NOT_A_TEAM = 42
