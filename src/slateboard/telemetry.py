"""OpenTelemetry tracing of runs: run -> step -> view / propose (-> model call) / decision / store append.

Off by default. While off, ``span()`` returns one shared do-nothing context manager and no
OpenTelemetry object is created, so a step pays a function call and a global read per hook.
``enable()`` turns it on with a tracer from the given provider (or the global one that the
application configured, e.g. with ``opentelemetry-sdk``); ``enable_from_env()`` is what the CLI
calls: with ``SLATEBOARD_OTEL=otlp`` it installs the SDK (the ``otel`` extra) with an OTLP/HTTP
exporter configured by the standard ``OTEL_EXPORTER_OTLP_*`` variables, with
``SLATEBOARD_OTEL=console`` it prints spans to stderr.

Span names and attributes (all attributes are plain strings, ints or bools):

- ``slateboard.run``: ``slateboard.board``, ``slateboard.blueprint``, ``slateboard.end_reason``
- ``slateboard.step``: ``slateboard.worker``, ``slateboard.invocation``, ``slateboard.control``
- ``slateboard.view``: ``slateboard.view.version``, ``.hash``, ``.size``, ``.budget``
- ``slateboard.propose``: ``slateboard.worker``
- ``chat {model}`` (a CLIENT span per model call, OpenTelemetry GenAI semantic conventions):
  ``gen_ai.operation.name``, ``gen_ai.provider.name``, ``gen_ai.request.model``,
  ``gen_ai.response.model``, ``gen_ai.request.max_tokens``, ``gen_ai.request.temperature``,
  ``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``, ``gen_ai.response.finish_reasons``
- ``execute_tool {name}`` per tool call of an LLM worker: ``gen_ai.operation.name``,
  ``gen_ai.tool.name``, ``slateboard.tool.ok``
- ``slateboard.decide``: ``slateboard.outcome``, ``slateboard.stage``, ``slateboard.reason``,
  ``slateboard.seq``, ``slateboard.version``
- ``slateboard.store.append``: ``slateboard.seq``
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .errors import InvalidInput
from .redaction import redact

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from .kernel.record import Record
    from .models.protocol import Generation
    from .views import View

__all__ = [
    "ENV",
    "TRACER_NAME",
    "disable",
    "enable",
    "enable_from_env",
    "enabled",
    "model_span",
    "record_decision",
    "record_generation",
    "record_view",
    "set_attributes",
    "span",
]

ENV = "SLATEBOARD_OTEL"
TRACER_NAME = "slateboard"

_tracer: Tracer | None = None
_NOOP: contextlib.nullcontext[None] = contextlib.nullcontext()

Attr = str | int | float | bool | list[str]


def enable(provider: TracerProvider | None = None) -> None:
    """Trace from now on, with a tracer of ``provider`` (default: OpenTelemetry's global provider)."""
    from importlib.metadata import PackageNotFoundError, version

    from opentelemetry import trace

    try:
        # from the installed metadata: importing the package itself here would close an import cycle
        ours: str | None = version("slateboard")
    except PackageNotFoundError:
        ours = None
    global _tracer
    _tracer = (provider or trace.get_tracer_provider()).get_tracer(TRACER_NAME, ours)


def disable() -> None:
    """Stop tracing; ``span()`` is a no-op again."""
    global _tracer
    _tracer = None


def enabled() -> bool:
    """Whether spans are being recorded."""
    return _tracer is not None


def enable_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """Enable tracing as ``SLATEBOARD_OTEL`` asks (``otlp`` or ``console``); True when it did.

    Installs an SDK ``TracerProvider`` (needs the ``otel`` extra) with a batch processor, as the
    global provider, so spans of libraries below slateboard land in the same trace."""
    env = os.environ if environ is None else environ
    kind = env.get(ENV, "").strip().lower()
    if kind in ("", "0", "off", "false", "no"):
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider as SdkProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    except ImportError as exc:
        # a setting the user chose, not a crash: name the extra that provides the SDK (issue 48)
        raise InvalidInput(
            f"{ENV}={kind} needs the OpenTelemetry SDK: pip install 'slateboard[otel]' (missing: {exc.name})"
        ) from None

    exporter: SpanExporter
    if kind == "console":
        import sys

        # stderr: stdout may be a protocol channel (slateboard mcp serve over stdio) or --json output
        exporter = ConsoleSpanExporter(out=sys.stderr)
    elif kind in ("1", "on", "true", "yes", "otlp"):
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise InvalidInput(
                f"{ENV}={kind} needs the OTLP exporter: pip install 'slateboard[otel]' (missing: {exc.name})"
            ) from None

        exporter = OTLPSpanExporter()  # endpoint, headers: the standard OTEL_EXPORTER_OTLP_* variables
    else:
        raise InvalidInput(f"{ENV} must be otlp, console or off, not {kind!r}")
    service = env.get("OTEL_SERVICE_NAME", "slateboard")
    provider = SdkProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    enable(provider)
    return True


def span(name: str, attributes: Mapping[str, Attr | None] | None = None) -> contextlib.AbstractContextManager[Any]:
    """A span named ``name`` around a block (the current span is its parent), or a shared no-op
    when tracing is off. The context manager yields the span (None when off); an exception
    leaving the block is recorded on the span and re-raised."""
    tracer = _tracer
    if tracer is None:
        return _NOOP
    return tracer.start_as_current_span(redact(name), attributes=_clean(attributes))


def set_attributes(sp: Span | None, attributes: Mapping[str, Attr | None]) -> None:
    """Set ``attributes`` (None values skipped) on ``sp`` when tracing is on (``sp`` not None)."""
    if sp is not None:
        sp.set_attributes(_clean(attributes))


def model_span(
    model: str, *, max_tokens: int | None = None, temperature: float | None = None
) -> contextlib.AbstractContextManager[Any]:
    """A GenAI ``chat {model}`` CLIENT span around one model call (no-op when off)."""
    tracer = _tracer
    if tracer is None:
        return _NOOP
    from opentelemetry.trace import SpanKind

    model = redact(model)
    provider, _, _ = model.partition(":")
    return tracer.start_as_current_span(
        f"chat {model}",
        kind=SpanKind.CLIENT,
        attributes=_clean(
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": provider or model,
                "gen_ai.request.model": model,
                "gen_ai.request.max_tokens": max_tokens,
                "gen_ai.request.temperature": temperature,
            }
        ),
    )


def record_generation(sp: Span | None, gen: Generation) -> None:
    """Put a generation's response model, token usage and finish reason on its model span."""
    if sp is None:
        return
    sp.set_attributes(
        {
            "gen_ai.response.model": redact(gen.model),
            "gen_ai.usage.input_tokens": gen.usage.prompt_tokens,
            "gen_ai.usage.output_tokens": gen.usage.completion_tokens,
            "gen_ai.response.finish_reasons": [gen.finish_reason],
            "slateboard.usage.estimated": gen.usage.estimated,
        }
    )


def record_view(sp: Span | None, view: View) -> None:
    """Put a view's version, hash, size and budget on its span."""
    if sp is None:
        return
    sp.set_attributes(
        {
            "slateboard.view.version": view.version,
            "slateboard.view.hash": view.hash,
            "slateboard.view.size": view.size,
            "slateboard.view.budget": view.budget,
        }
    )


def record_decision(sp: Span | None, record: Record) -> None:
    """Put a decision's outcome, stage, reason, seq and version on its span."""
    if sp is None:
        return
    sp.set_attributes(
        _clean(
            {
                "slateboard.outcome": record.outcome,
                "slateboard.stage": record.stage,
                "slateboard.reason": record.reason,  # _clean redacts it
                "slateboard.seq": record.seq,
                "slateboard.version": record.version,
                "slateboard.worker": record.worker,
            }
        )
    )


def _clean(attributes: Mapping[str, Attr | None] | None) -> dict[str, Attr]:
    # every text attribute passes the one redaction (a model string or reason may hold a key)
    return {k: redact(v) if isinstance(v, str) else v for k, v in (attributes or {}).items() if v is not None}
