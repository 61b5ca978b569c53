"""The coordinator control unit: a model chooses the next invocation among the eligible ones.

``CoordinatorControl`` is a ``ControlUnit`` backed by a chat model. For each selection it shows
the model a bounded prompt: the eligible invocations (numbered, in agenda order), the board
summary (version, steps, tokens, active stages) and a compact, recency-ordered digest of the
state (``BoardSummary.digest`` when the runner provides one, else ``digest_state`` over the
state callable it was given). It never sees the log. The model answers
``{"choice": <invocation id | worker name | number>, "terminate": bool, "reason": str}``; the
answer is read tolerantly (``parse_json_object``: code fences, prose around the object).

Guarantees:

* ``select`` always returns a Selection that names one of ``eligible`` or terminates; it never
  raises for a model failure or a malformed answer: those fall back to agenda order (the first
  eligible invocation), and the Selection's reason says so and why;
* the reason of every Selection starts with ``"coordinator:"`` and is what the runner logs;
* with ``allow_terminate=False`` the model cannot end the run (a terminate answer falls back);
* token usage of every model call is kept in ``usage`` (component ``"coordinator"``) and each
  decision (prompt size, raw answer, outcome) in ``decisions``: the ControlUnit protocol has no
  channel for usage, so callers report it from there;
* the unit never changes the board.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import telemetry
from ..kernel.canonical import JSON
from ..kernel.jsonvalue import REPLY_LIMITS, over_limits
from ..kernel.pointer import MISSING, PointerError, escape_token, parse_pointer, resolve
from ..kernel.record import Usage
from ..models import Message, Model, ModelError, resolve_model
from ..models.pricing import SpendRefused
from ..workers.llm import SpendHook, guarded_call
from .control import BoardSummary, Selection
from .invocation import Invocation

__all__ = [
    "COMPONENT",
    "DEFAULT_INSTRUCTIONS",
    "CoordinatorControl",
    "CoordinatorDecision",
    "digest_state",
    "parse_json_object",
]

COMPONENT = "coordinator"
"""The usage component of coordinator model calls."""

DEFAULT_INSTRUCTIONS = """\
You are the control unit of a shared board worked on by specialist workers.
Pick the ONE pending invocation that moves the task forward most, given what the board holds now.
Terminate only when the task is finished or nothing useful is left to do.
Answer with one JSON object and nothing else:
{"choice": "<invocation id>", "terminate": false, "reason": "<one short sentence>"}
To end the run instead: {"choice": null, "terminate": true, "reason": "<why>"}"""

_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*[ \t]*\r?\n(.*?)(?:```|\Z)", re.DOTALL)
_MAX_STARTS = 64
_DECODER = json.JSONDecoder()


# -- tolerant JSON -----------------------------------------------------------------------------
def parse_json_object(text: str, *, keys: Sequence[str] = ()) -> dict[str, Any] | None:
    """The JSON object a model reply holds, or None. Never raises.

    Tried in order: the whole text; the body of each fenced code block; every ``{`` in the text
    (at most 64), decoding one object from there. When ``keys`` are given, the first object
    that has one of them wins over earlier objects that have none; otherwise the first object.
    """
    if not isinstance(text, str) or over_limits(text, REPLY_LIMITS, "reply") is not None:
        return None  # never decoded (json recurses on deep text); callers name the bound with reply_fault
    candidates: list[dict[str, Any]] = []

    def take(value: Any) -> bool:
        if isinstance(value, dict):
            candidates.append(value)
            return not keys or any(k in value for k in keys)
        return False

    stripped = text.strip()
    try:
        if take(json.loads(stripped)):
            return candidates[-1]
    except ValueError:
        pass
    for m in _FENCE.finditer(text):
        try:
            if take(json.loads(m.group(1).strip())):
                return candidates[-1]
        except ValueError:
            continue
    start = text.find("{")
    tries = 0
    while start >= 0 and tries < _MAX_STARTS:
        tries += 1
        try:
            value, _end = _DECODER.raw_decode(text, start)
        except ValueError:
            value = None
        if take(value):
            return candidates[-1]
        start = text.find("{", start + 1)
    return candidates[0] if candidates else None


# -- the digest --------------------------------------------------------------------------------
def _clip(value: JSON, limit: int) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def _lines(value: JSON, pointer: str, depth: int, newest: int, item_chars: int) -> list[str]:
    if isinstance(value, list):
        head = f"{pointer or '/'}: {len(value)} item{'s' if len(value) != 1 else ''}"
        if not value:
            return [head]
        shown = [f"  [{i}] {_clip(value[i], item_chars)}" for i in range(len(value) - 1, -1, -1)][:newest]
        more = len(value) - len(shown)
        return [head + (" (newest first)" if len(value) > 1 else ""), *shown] + (
            [f"  … {more} older"] if more > 0 else []
        )
    if isinstance(value, dict):
        if depth <= 0:
            return [f"{pointer or '/'}: {_clip(value, item_chars)}"]
        out: list[str] = []
        for key in sorted(value):
            out.extend(_lines(value[key], f"{pointer}/{escape_token(key)}", depth - 1, newest, item_chars))
        return out or [f"{pointer or '/'}: {{}}"]
    return [f"{pointer or '/'} = {_clip(value, item_chars)}"]


def digest_state(
    state: JSON,
    *,
    limit: int = 1500,
    recent: Sequence[str] = (),
    newest: int = 3,
    item_chars: int = 160,
) -> str:
    """A compact, recency-ordered text digest of a board state, at most ``limit`` characters.

    Pointers in ``recent`` (most recent first) are shown first with their values; then every
    member of the state to depth two: scalars with their value, arrays with their size and their
    ``newest`` last items newest first (arrays on a board grow by appending, so the end is the
    most recent), deeper objects clipped. Every value is clipped to ``item_chars``; the result
    is cut (with ``…``) at ``limit``. Deterministic: keys are sorted.
    """
    lines: list[str] = []
    for ptr in recent:
        try:
            node = resolve(state, parse_pointer(ptr))
        except PointerError:
            continue
        if node is not MISSING:
            lines.append(f"recent {ptr or '/'} = {_clip(node, item_chars)}")
    lines.extend(_lines(state, "", 2, newest, item_chars))
    text = "\n".join(lines)
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


# -- the control unit --------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class CoordinatorDecision:
    """One selection made by a CoordinatorControl: what the model said and what was chosen.

    ``fallback`` is True when agenda order was used instead of the model's choice.
    """

    selection: Selection
    raw: str
    fallback: bool
    usage: Usage = field(default_factory=lambda: Usage(component=COMPONENT))

    def to_json(self) -> dict[str, JSON]:
        """Plain JSON form (for logs)."""
        return {
            **self.selection.to_json(),
            "raw": self.raw[:2000],
            "fallback": self.fallback,
            "usage": self.usage.to_json(),
        }


class CoordinatorControl:
    """A ControlUnit that asks a model which eligible invocation runs next (see module docstring).

    ``model``: a Model or model string. ``instructions``: the system prompt (default
    DEFAULT_INSTRUCTIONS). ``workers``: optional role descriptions by worker name, shown next to
    the invocations. ``state``: a zero-argument callable returning the committed state (e.g.
    ``lambda: runner.kernel.state``), digested when the summary carries no digest.
    ``ask_when_single``: when False (default) a single eligible invocation is chosen without a
    model call. ``constrain``: send a JSON schema restricting ``choice`` to the eligible ids.
    """

    def __init__(
        self,
        model: Model | str,
        *,
        instructions: str | None = None,
        workers: Mapping[str, str] | None = None,
        state: Callable[[], JSON] | None = None,
        digest_limit: int = 1500,
        allow_terminate: bool = True,
        ask_when_single: bool = False,
        constrain: bool = True,
        max_tokens: int = 160,
        temperature: float = 0.0,
        timeout: float | None = 60.0,
    ) -> None:
        self.model: Model = resolve_model(model)
        self.instructions = instructions or DEFAULT_INSTRUCTIONS
        self.workers = dict(workers or {})
        self.state = state
        self.digest_limit = digest_limit
        self.allow_terminate = allow_terminate
        self.ask_when_single = ask_when_single
        self.constrain = constrain
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.timeout = timeout
        self.usage = Usage(component=COMPONENT)
        self.calls = 0
        self.decisions: list[CoordinatorDecision] = []
        self.spend: SpendHook | None = None
        """Set by a run with a spend cap: each model call reserves its worst case first, and a
        refused one stops the run (the runner ends it ``budget:<ledger>``)."""

    # -- building blocks -----------------------------------------------------------------------
    def digest(self, summary: BoardSummary) -> str:
        """The state digest shown to the model: the summary's, else one built from ``state``."""
        if summary.digest:
            return summary.digest[: self.digest_limit]
        if self.state is None:
            return ""
        recent = summary.extra.get("recent") if isinstance(summary.extra, Mapping) else None
        paths = [p for p in recent if isinstance(p, str)] if isinstance(recent, list) else []
        return digest_state(self.state(), limit=self.digest_limit, recent=paths)

    def messages(self, eligible: Sequence[Invocation], summary: BoardSummary) -> list[Message]:
        """The prompt for one selection (deterministic in its inputs)."""
        rows = []
        for n, inv in enumerate(eligible, start=1):
            event = inv.event if isinstance(inv.event, dict) else {}
            cause = f"{event.get('op', '')} {event.get('path', '')}".strip() or "start"
            role = self.workers.get(inv.worker)
            line = f"{n}. id={inv.id} worker={inv.worker} cause={cause} priority={inv.priority}"
            if inv.rule:
                line += f" rule={inv.rule}"
            if role:
                line += f" role={_clip(role, 120)}"
            rows.append(line)
        stages = ", ".join(summary.active_stages) or "none"
        parts = [
            "Pending invocations (agenda order):",
            *rows,
            "",
            f"Board: version {summary.version}, {summary.steps} steps so far, "
            f"{summary.tokens_used} tokens used, active stages: {stages}.",
        ]
        digest = self.digest(summary)
        if digest:
            parts += ["", "Board digest (most recent first):", digest]
        return [Message.system(self.instructions), Message.user("\n".join(parts))]

    def schema(self, eligible: Sequence[Invocation]) -> dict[str, Any]:
        """The JSON schema of an answer (``choice`` restricted to the eligible ids or null)."""
        ids: list[Any] = [inv.id for inv in eligible]
        return {
            "type": "object",
            "properties": {
                "choice": {"anyOf": [{"type": "string", "enum": ids}, {"type": "null"}]},
                "terminate": {"type": "boolean"},
                "reason": {"type": "string"},
            },
            "required": ["choice", "terminate", "reason"],
            "additionalProperties": False,
        }

    # -- selection -----------------------------------------------------------------------------
    async def select(self, eligible: Sequence[Invocation], board_summary: BoardSummary) -> Selection:
        """Ask the model (see class); fall back to agenda order with the reason on any failure."""
        if not eligible:
            return self._record(Selection.stop("coordinator: no eligible invocation"), "", False, None)
        if len(eligible) == 1 and not self.ask_when_single:
            only = eligible[0]
            sel = Selection.choose(only, f"coordinator: only eligible invocation {only.id} ({only.worker})")
            return self._record(sel, "", False, None)
        messages = self.messages(eligible, board_summary)
        started = time.perf_counter()
        try:
            # telemetry hook (issue 17): the coordinator's model call is a GenAI span too
            with telemetry.model_span(self.model.name, max_tokens=self.max_tokens, temperature=self.temperature) as sp:
                gen, _worst = await guarded_call(
                    self.spend,
                    self.model.name,
                    messages,
                    self.max_tokens,
                    functools.partial(
                        self.model.generate,
                        messages,
                        json_schema=self.schema(eligible) if self.constrain else None,
                        max_tokens=self.max_tokens,
                        temperature=self.temperature,
                        timeout=self.timeout,
                    ),
                )
                telemetry.record_generation(sp, gen)
        except SpendRefused as exc:
            return self._record(Selection.stop(f"coordinator: {exc}"), "", False, None)
        except (ModelError, TimeoutError) as exc:
            return self._fallback(eligible, f"model failed ({type(exc).__name__}: {exc})", "", None)
        usage = Usage(
            gen.usage.prompt_tokens,
            gen.usage.completion_tokens,
            round((time.perf_counter() - started) * 1000.0, 3),
            COMPONENT,
            gen.usage.cache_read,
            gen.usage.cache_write,
        )
        raw = gen.text
        obj = parse_json_object(raw, keys=("choice", "terminate"))
        if obj is None:
            fault = over_limits(raw, REPLY_LIMITS, "reply")
            return self._fallback(eligible, fault or "answer is not a JSON object", raw, usage)
        why = obj.get("reason")
        why_text = (why.strip()[:200] if isinstance(why, str) else _clip(why, 200)) if why else "no reason given"
        if _truthy(obj.get("terminate")):
            if self.allow_terminate:
                return self._record(Selection.stop(f"coordinator: terminate: {why_text}"), raw, False, usage)
            return self._fallback(eligible, "terminate is not allowed", raw, usage)
        chosen = _resolve_choice(obj.get("choice"), eligible)
        if chosen is None:
            return self._fallback(eligible, f"choice {_clip(obj.get('choice'), 80)} is not eligible", raw, usage)
        sel = Selection.choose(chosen, f"coordinator: {chosen.id} ({chosen.worker}): {why_text}")
        return self._record(sel, raw, False, usage)

    def _fallback(self, eligible: Sequence[Invocation], why: str, raw: str, usage: Usage | None) -> Selection:
        first = eligible[0]
        sel = Selection.choose(first, f"coordinator: {why}; agenda order: {first.id} ({first.worker})")
        return self._record(sel, raw, True, usage)

    def _record(self, sel: Selection, raw: str, fallback: bool, usage: Usage | None) -> Selection:
        used = usage or Usage(component=COMPONENT)
        if usage is not None:
            self.calls += 1
            self.usage = Usage(
                self.usage.tokens_in + usage.tokens_in,
                self.usage.tokens_out + usage.tokens_out,
                round(self.usage.latency_ms + usage.latency_ms, 3),
                COMPONENT,
                self.usage.cache_read + usage.cache_read,
                self.usage.cache_write + usage.cache_write,
            )
        self.decisions.append(CoordinatorDecision(sel, raw, fallback, used))
        return sel


def _truthy(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1")
    return False


def _resolve_choice(choice: Any, eligible: Sequence[Invocation]) -> Invocation | None:
    """An eligible invocation named by id, by worker name (its first), or by 1-based number."""
    if isinstance(choice, bool) or choice is None:
        return None
    if isinstance(choice, int):
        return eligible[choice - 1] if 1 <= choice <= len(eligible) else None
    if not isinstance(choice, str):
        return None
    text = choice.strip()
    for inv in eligible:
        if inv.id == text:
            return inv
    for inv in eligible:
        if inv.worker == text:
            return inv
    if text.isdigit():
        return _resolve_choice(int(text), eligible)
    return None
