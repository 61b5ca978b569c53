"""A model that errs on a schedule: ``ErringModel`` wraps any Model and, with probability ``p``
per call, replaces its reply with an error of one of the kinds a language model makes.

The schedule (``ErrorSchedule``) is a pure function of (seed, episode, call index): whether call
``i`` of episode ``e`` errs, and with which kind, does not depend on the system asking, on the
reply, on the wall clock or on any other call. Every system that plays episode ``e`` therefore
meets the same error kinds at the same call indices, and a sweep over rates is nested: an error
injected at rate ``p`` is injected (with the same kind) at every rate above ``p``.

The kinds (``ERROR_KINDS``):

* ``malformed``: the reply cut in half (a prefix of a JSON object never parses);
* ``hallucinated``: a command that does not exist (``ErrorContent.command``: one of
  ``HALLUCINATIONS``, never one of the admissible commands) in the role's main output;
* ``false_claim``: the claim that the goal is reached (``CLAIM``) in the role's main output;
* ``repeat``: the previous reply delivered to the same role, again (a cycle; the empty reply when
  the role has had none yet);
* ``off_contract``: another role's output (a plan from the actor, a command from the planner).

``malformed`` and ``repeat`` are the same for every system (made here from the replies
themselves); the other three are *rendered* by the system's ``ErrorFormat`` from one neutral
``ErrorContent`` (the same command, the same claim), so each system receives the same error in
its own reply format. What each system then does with it is that system's business: the point
of the wrapper is to measure it. The wrapper ignores decoding constraints (``json_schema``): it
stands for a model that breaks them, or a provider that does not enforce them.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

from ..errors import InvalidInput
from .protocol import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TEMPERATURE,
    DEFAULT_TIMEOUT,
    Generation,
    GenerationUsage,
    Message,
    Model,
    estimate_tokens,
)

__all__ = [
    "CLAIM",
    "ERROR_KINDS",
    "HALLUCINATIONS",
    "ErringModel",
    "ErrorContent",
    "ErrorContext",
    "ErrorFormat",
    "ErrorKind",
    "ErrorSchedule",
    "Injection",
    "parse_error_kinds",
    "parse_error_rates",
]

ErrorKind = Literal["malformed", "hallucinated", "false_claim", "repeat", "off_contract"]
ERROR_KINDS: tuple[ErrorKind, ...] = get_args(ErrorKind)
"""Every error kind, in the order the schedule numbers them."""

CLAIM = "the goal is reached: the game is won"
"""The false claim every system receives (in its role's main output)."""

HALLUCINATIONS: tuple[str, ...] = (
    "take the obsidian amulet",
    "open the moonstone vault",
    "unlock the crystal door with the cobalt key",
    "put the quartz idol on the altar",
    "climb the rope ladder",
    "go through the silver portal",
)
"""Commands that refer to nothing in the games we play; the schedule picks one per error,
skipping any that happens to be admissible."""


def parse_error_kinds(text: str) -> tuple[ErrorKind, ...]:
    """The kinds of a comma-separated list (``all`` or empty: every kind), in ``ERROR_KINDS``
    order, without repeats. InvalidInput (a ValueError) naming an unknown kind and the known ones."""
    names = [p.strip().lower().replace("-", "_") for p in text.split(",") if p.strip()]
    if not names or "all" in names:
        return ERROR_KINDS
    unknown = [n for n in names if n not in ERROR_KINDS]
    if unknown:
        raise InvalidInput(f"unknown error kind {unknown[0]!r} (kinds: {', '.join(ERROR_KINDS)}, or all)")
    return tuple(k for k in ERROR_KINDS if k in names)


def parse_error_rates(text: str) -> tuple[float, ...]:
    """The rates of a comma-separated list (``0.2`` or the sweep ``0,0.1,0.2``), in the order
    given, without repeats. InvalidInput (a ValueError) naming the first item that is not a
    number in [0, 1], or an empty list."""
    rates: list[float] = []
    for part in text.split(","):
        item = part.strip()
        if not item:
            continue
        try:
            rate = float(item)
        except ValueError:
            raise InvalidInput(f"error rate {item!r} is not a number (rates are in [0, 1])") from None
        if not 0.0 <= rate <= 1.0:
            raise InvalidInput(f"error rate {item!r} is outside [0, 1]")
        if rate not in rates:
            rates.append(rate)
    if not rates:
        raise InvalidInput("no error rate given (rates are in [0, 1], e.g. 0.2 or 0,0.1,0.2)")
    return tuple(rates)


@dataclass(frozen=True, slots=True)
class ErrorSchedule:
    """Which calls err, and how: a pure function of (``seed``, episode, call index).

    ``rate`` is the probability that a call errs (0: never, 1: always), ``kinds`` the kinds drawn
    from (uniformly). Guarantees: ``kind_at`` is deterministic; the uniform draw behind "errs"
    does not depend on ``rate``, so the calls that err at one rate err, with the same kind, at
    every higher rate (sweeps are nested); the kind does not depend on ``rate`` either.
    InvalidInput (a ValueError) for a rate outside [0, 1], no kind, or an unknown kind."""

    rate: float = 0.0
    seed: int = 0
    kinds: tuple[ErrorKind, ...] = ERROR_KINDS

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise InvalidInput(f"error rate {self.rate!r} is outside [0, 1]")
        if not self.kinds:
            raise InvalidInput("an error schedule needs at least one kind")
        unknown = [k for k in self.kinds if k not in ERROR_KINDS]
        if unknown:
            raise InvalidInput(f"unknown error kind {unknown[0]!r} (kinds: {', '.join(ERROR_KINDS)})")

    def _draws(self, episode: str, call: int, what: str) -> tuple[float, int]:
        digest = hashlib.blake2b(f"{self.seed}\x00{episode}\x00{call}\x00{what}".encode(), digest_size=16).digest()
        return int.from_bytes(digest[:8], "big") / 2.0**64, int.from_bytes(digest[8:], "big")

    def kind_at(self, episode: str, call: int) -> ErrorKind | None:
        """The kind of error call ``call`` (0-based) of ``episode`` gets, or None when it does not err."""
        if self.rate <= 0.0:
            return None
        draw, index = self._draws(episode, call, "kind")
        if draw >= self.rate:
            return None
        return self.kinds[index % len(self.kinds)]

    def pick(self, episode: str, call: int, options: Sequence[str], *, avoid: Sequence[str] = ()) -> str:
        """One of ``options`` for this call (deterministic), skipping those in ``avoid``
        (case-insensitive); the first option with `` now`` appended when every one is avoided."""
        if not options:
            raise InvalidInput("pick needs at least one option")
        taken = {a.strip().lower() for a in avoid}
        _, index = self._draws(episode, call, "pick")
        for step in range(len(options)):
            option = options[(index + step) % len(options)]
            if option.lower() not in taken:
                return option
        return options[0] + " now"

    def errors(self, episode: str, calls: int) -> list[tuple[int, ErrorKind]]:
        """(call index, kind) of every call among the first ``calls`` of ``episode`` that errs."""
        out: list[tuple[int, ErrorKind]] = []
        for call in range(calls):
            kind = self.kind_at(episode, call)
            if kind is not None:
                out.append((call, kind))
        return out


@dataclass(frozen=True, slots=True)
class ErrorContext:
    """What the wrapper knows of the episode when a call is made: ``turn`` (commands the
    environment has executed) and ``admissible`` (the commands it accepts now; a hallucinated
    command is never one of them)."""

    turn: int = 0
    admissible: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ErrorContent:
    """One error, before a system's format renders it: the kind, the role that errs, the reply
    the wrapped model gave (``good``), the previous reply delivered to that role (None before
    the first), the hallucinated ``command`` and the false ``claim`` of this call."""

    kind: ErrorKind
    role: str
    good: str
    previous: str | None
    command: str
    claim: str = CLAIM


class ErrorFormat(Protocol):
    """How one system's replies look: which role a request is for, and the reply text of an
    ``hallucinated``, ``false_claim`` or ``off_contract`` error for that role (``malformed`` and
    ``repeat`` are made by ErringModel itself, the same way for every system)."""

    def role(self, messages: Sequence[Message], json_schema: Mapping[str, Any] | None) -> str:
        """A short name of the role this request asks (``actor``, ``planner``, ...)."""
        ...

    def render(self, error: ErrorContent) -> str:
        """The reply text that carries ``error`` in this system's format."""
        ...


@dataclass(frozen=True, slots=True)
class Injection:
    """One error delivered: where (episode, call index, the environment's ``turn``), which kind,
    to which role, the text delivered and the reply it replaced."""

    episode: str
    call: int
    kind: ErrorKind
    role: str
    turn: int
    text: str
    good: str

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "episode": self.episode,
            "call": self.call,
            "kind": self.kind,
            "role": self.role,
            "turn": self.turn,
            "text": self.text,
            "good": self.good,
        }


def truncated(text: str) -> str:
    """The first half of ``text`` (the ``malformed`` reply)."""
    return text[: len(text) // 2]


@dataclass
class ErringModel:
    """A Model over ``inner`` that errs where ``schedule`` says, for one episode named ``episode``.

    Every call is forwarded to ``inner`` (so a policy that follows the game keeps following it);
    on a call the schedule marks, the reply text is replaced by the error (see the module
    docstring) and the call is listed in ``injections``. ``format`` names the role of each
    request and renders the system-specific kinds; ``context`` (optional) says the environment's
    turn and admissible commands when a call is made. The usage of a replaced reply keeps the
    prompt's count and estimates the completion (marked ``estimated``): the error's tokens are
    counted like any reply's. ``calls`` counts every call, errors included, and ``roles`` names
    the role of each.
    """

    inner: Model
    schedule: ErrorSchedule
    episode: str
    format: ErrorFormat
    context: Callable[[], ErrorContext] | None = None
    calls: int = 0
    injections: list[Injection] = field(default_factory=list)
    roles: list[str] = field(default_factory=list)
    """The role of every call, in order (what ``format.role`` named)."""
    _last: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self.inner.name

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = DEFAULT_TEMPERATURE,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> Generation:
        """The wrapped model's reply, or the scheduled error in its place (see the class)."""
        started = time.perf_counter()
        call = self.calls
        self.calls += 1
        gen = await self.inner.generate(
            messages, json_schema=json_schema, max_tokens=max_tokens, temperature=temperature, timeout=timeout
        )
        role = self.format.role(messages, json_schema)
        self.roles.append(role)
        kind = self.schedule.kind_at(self.episode, call)
        if kind is None:
            self._last[role] = gen.text
            return gen
        ctx = self.context() if self.context is not None else ErrorContext()
        previous = self._last.get(role)
        if kind == "malformed":
            text = truncated(gen.text)
        elif kind == "repeat":
            text = previous if previous is not None else ""
        else:
            command = self.schedule.pick(self.episode, call, HALLUCINATIONS, avoid=ctx.admissible)
            text = self.format.render(ErrorContent(kind, role, gen.text, previous, command))
        self._last[role] = text
        self.injections.append(Injection(self.episode, call, kind, role, ctx.turn, text, gen.text))
        return Generation(
            text=text,
            usage=GenerationUsage(gen.usage.prompt_tokens, estimate_tokens(text), estimated=True),
            finish_reason="stop",
            model=gen.model,
            latency_s=time.perf_counter() - started,
            retries=gen.retries,
        )

    def kinds(self) -> dict[str, int]:
        """Errors delivered so far, per kind (every kind of the schedule listed, 0 included)."""
        counts: dict[str, int] = {k: 0 for k in self.schedule.kinds}
        for inj in self.injections:
            counts[inj.kind] += 1
        return counts
