"""The worker protocol and the reply every worker returns.

A worker turns a view (and the event that woke it) into a *candidate* patch. It never touches
the state: the runner wraps the reply into a ``Proposal`` (``WorkerReply.to_proposal``) and the
kernel decides. A worker never raises for a failure of its model or function: the failure
becomes a reply whose patch is the raw (possibly empty) text, which the kernel rejects at stage
``parse``, with the error kept in ``diagnostics`` (and so in the record's ``meta``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import UsageError
from ..kernel.canonical import JSON
from ..kernel.kernel import Proposal
from ..kernel.record import Usage

if TYPE_CHECKING:
    from ..models.protocol import Generation
    from ..views import View

__all__ = [
    "DEFAULT_COMPONENT",
    "Feedback",
    "Worker",
    "WorkerConfigError",
    "WorkerReply",
    "feedback_lines",
]

DEFAULT_COMPONENT = "worker"
"""The usage component label of worker invocations (the runner reports tokens per component)."""

Feedback = str | Sequence[str] | None
"""Why the worker's last proposals were rejected: one text, several, or nothing."""


class WorkerConfigError(UsageError, ValueError):
    """A worker cannot be built as configured (unknown worker, bad function reference, contract
    mismatch, unknown tool); the message names the worker and the offending value."""


@dataclass(frozen=True, slots=True)
class WorkerReply:
    """One worker invocation's result.

    ``patch`` is a list of RFC 6902 operations or raw text (the kernel parses text itself);
    ``expand`` lists handles the worker asked to see next time (slateboard.views);
    ``usage`` is always present, labelled with its component; ``diagnostics`` is plain JSON
    (model name, how the reply was parsed, tool calls, the error if any) and goes into the
    record's ``meta``; ``raw`` is the model's last reply text, when there was a model.
    """

    patch: Any
    usage: Usage = field(default_factory=Usage)
    expand: tuple[str, ...] = ()
    diagnostics: dict[str, JSON] = field(default_factory=dict)
    raw: str | None = None

    @property
    def error(self) -> str | None:
        """The failure that produced this reply (model error, function exception), if any."""
        err = self.diagnostics.get("error")
        return err if isinstance(err, str) else None

    def to_proposal(
        self,
        view: View,
        *,
        invocation: str | None = None,
        event: JSON = None,
        meta: Mapping[str, JSON] | None = None,
    ) -> Proposal:
        """The kernel proposal for this reply to ``view``: viewed version and view hash from the
        view, usage from the reply, and ``diagnostics`` (plus ``meta``) as the record's meta."""
        merged: dict[str, JSON] = dict(self.diagnostics)
        if self.expand:
            merged["expand"] = list(self.expand)
        if meta:
            merged.update(meta)
        return Proposal(
            worker=view.worker,
            patch=self.patch,
            viewed_version=view.version,
            invocation=invocation,
            event=event,
            view_hash=view.hash,
            usage=self.usage,
            meta=merged,
        )


@runtime_checkable
class Worker(Protocol):
    """Anything that proposes patches for one blueprint worker.

    Guarantees of ``propose``: it returns a WorkerReply and does not raise for model, tool or
    function failures (those become parse rejections with the error in ``diagnostics``);
    asyncio cancellation propagates; it never mutates the view or the state.
    """

    @property
    def name(self) -> str:
        """The blueprint worker this proposes for."""
        ...

    async def propose(self, view: View, event: JSON = None, *, feedback: Feedback = None) -> WorkerReply:
        """Propose a patch for ``view`` (woken by ``event``), told why earlier ones failed."""
        ...


def feedback_lines(view: View | None, feedback: Feedback) -> list[str]:
    """The rejection reasons to tell a worker: explicit ``feedback`` first, then the view's
    recent rejections (``stage: reason``), without duplicates."""
    lines: list[str] = []
    if isinstance(feedback, str):
        if feedback.strip():
            lines.append(feedback.strip())
    elif feedback is not None:
        lines.extend(f.strip() for f in feedback if isinstance(f, str) and f.strip())
    if view is not None:
        for rej in view.rejections:
            if not isinstance(rej, dict):
                continue
            stage = rej.get("stage")
            reason = rej.get("reason")
            text = f"{stage}: {reason}" if reason else f"{stage}"
            if not any(text in line or (isinstance(reason, str) and reason in line) for line in lines):
                lines.append(text)
    return lines


def usage_from(
    tokens_in: int, tokens_out: int, latency_s: float, component: str, *, cache_read: int = 0, cache_write: int = 0
) -> Usage:
    """A kernel Usage from token counts (prompt-cache reads and writes part of ``tokens_in``) and seconds."""
    return Usage(
        int(tokens_in), int(tokens_out), round(latency_s * 1000.0, 3), component, int(cache_read), int(cache_write)
    )


def generation_usage(gen: Generation, component: str) -> Usage:
    """A kernel Usage of one model call: its reported (or estimated) tokens, cache counts kept."""
    u = gen.usage
    return usage_from(
        u.prompt_tokens,
        u.completion_tokens,
        gen.latency_s,
        component,
        cache_read=u.cache_read,
        cache_write=u.cache_write,
    )


def sum_usage(parts: Sequence[Usage], component: str, latency_s: float | None = None) -> Usage:
    """Tokens summed over ``parts`` (cache counts too); latency is ``latency_s`` (wall time) when given."""
    tin = sum(u.tokens_in for u in parts)
    tout = sum(u.tokens_out for u in parts)
    lat = round(latency_s * 1000.0, 3) if latency_s is not None else sum(u.latency_ms for u in parts)
    return Usage(tin, tout, lat, component, sum(u.cache_read for u in parts), sum(u.cache_write for u in parts))


def jsonable(value: Any, limit: int = 2000) -> JSON:
    """A plain-JSON rendering of ``value`` for diagnostics (repr text when it is not JSON)."""
    import orjson

    try:
        return orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        text = repr(value)
        return text if len(text) <= limit else text[: limit - 1] + "…"
