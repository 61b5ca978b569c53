"""Scripted models for the scale tests and the scale benchmark, usable in real runner processes
through the model string ``python:scale_models:NAME`` (with this directory on PYTHONPATH).

``soak_model``: replies for the NOTES_PAIR blueprint of scale_testkit (writers ``a`` and ``b``
append notes, the ``decider`` answers) after a random latency: uniform between $SLATEBOARD_SOAK_MIN_MS and
$SLATEBOARD_SOAK_MAX_MS (default 5-40 ms), seeded by $SLATEBOARD_SOAK_SEED (default 0) and the
process id, so every process draws its own reproducible sequence. With probability
$SLATEBOARD_SOAK_INVALID (default 0) a writer's first attempt proposes an empty note (the
blueprint's invariant rejects it); a retry that carries the rejection as feedback is always valid.

``fixed_model``: the same replies after exactly $SLATEBOARD_SOAK_LATENCY_MS (default 200 ms).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from slateboard.models import Generation, GenerationUsage, Message

_WORKER = re.compile(r"You are worker '([^']+)'")


def reply_for(messages: Sequence[Message], *, invalid: bool = False) -> str:
    """The NOTES_PAIR reply to these messages (a note, or the answer for the decider)."""
    system = next((m.content for m in messages if m.role == "system"), "")
    found = _WORKER.search(system)
    worker = found.group(1) if found else "?"
    user = "\n".join(m.content for m in messages if m.role == "user")
    if worker == "decider":
        notes = user.count('"author"')
        return json.dumps({"patch": [{"op": "add", "path": "/answer", "value": f"{notes} notes"}]})
    retried = "notes are not empty" in user
    text = "" if invalid and not retried else f"a note by {worker}"
    return json.dumps({"patch": [{"op": "add", "path": "/notes/-", "value": {"author": worker, "text": text}}]})


class SleepyModel:
    """A Model that answers NOTES_PAIR prompts after a latency drawn by ``latency()``."""

    def __init__(self, name: str, low_ms: float, high_ms: float, seed: int, invalid: float = 0.0) -> None:
        self._name = name
        self.low_ms = low_ms
        self.high_ms = high_ms
        self.invalid = invalid
        self.rng = random.Random(seed)
        self.calls = 0

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
        """Sleep, then reply (see the module docstring)."""
        started = time.perf_counter()
        self.calls += 1
        delay = self.rng.uniform(self.low_ms, self.high_ms) / 1000.0
        invalid = self.rng.random() < self.invalid
        await asyncio.sleep(delay)
        text = reply_for(messages, invalid=invalid)
        return Generation(
            text=text,
            usage=GenerationUsage.estimate(messages, text),
            finish_reason="stop",
            model=self._name,
            latency_s=time.perf_counter() - started,
        )


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    return float(raw) if raw else default


def soak_model() -> SleepyModel:
    """Random latency, seeded per process (see the module docstring)."""
    seed = int(_env_float("SLATEBOARD_SOAK_SEED", 0)) * 1_000_003 + os.getpid()
    return SleepyModel(
        "python:scale_models:soak_model",
        _env_float("SLATEBOARD_SOAK_MIN_MS", 5),
        _env_float("SLATEBOARD_SOAK_MAX_MS", 40),
        seed,
        _env_float("SLATEBOARD_SOAK_INVALID", 0.0),
    )


def fixed_model() -> SleepyModel:
    """Exactly $SLATEBOARD_SOAK_LATENCY_MS per call (default 200 ms)."""
    ms = _env_float("SLATEBOARD_SOAK_LATENCY_MS", 200)
    return SleepyModel("python:scale_models:fixed_model", ms, ms, 0)
