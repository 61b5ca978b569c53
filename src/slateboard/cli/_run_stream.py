"""``slateboard run|resume --stream``: the run's tokens or committed updates printed as they come.

Instead of the live display, each event of the chosen stream goes to stdout the moment the
runner publishes it (subscribed before the run starts, so none is missed); with ``--json`` one
JSON object per line.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..vocabulary import TOKENS_EVENT
from ._errors import EXIT_USAGE, CliError

if TYPE_CHECKING:
    from ..runtime import RunEvent, RunResult

StreamOption = Annotated[
    str | None,
    typer.Option(
        "--stream",
        metavar="MODE",
        help="Print as the run goes: 'tokens' (each model reply as it is generated, tagged by worker) or 'updates' (each committed patch). With --json: one JSON object per line, per event, then the result.",
    ),
]

STREAM_MODES = ("tokens", "updates")
"""What ``slateboard run --stream`` can print as the run goes."""


def stream_mode(value: str | None) -> str | None:
    """``--stream``'s value, checked before any board is created (exit 2 on a bad one)."""
    if value is None or value in STREAM_MODES:
        return value
    raise CliError(f"--stream: expected one of {', '.join(STREAM_MODES)}, got {value!r}", code=EXIT_USAGE)


def event_int(value: Any, default: int = 0) -> int:
    """An event field as an int (``default`` when it is missing, a bool or not an int)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default


class StreamPrinter:
    """Prints ``slateboard run --stream`` events to stdout as they come. Text: a token chunk is
    written as it arrives, after a ``[worker]`` tag whenever another model call (or attempt)
    starts; an update is one line ``#seq v<version> worker: <patch>``. JSON: each event's
    ``RunEvent.to_json()`` on one line."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self._call: tuple[Any, ...] | None = None

    def __call__(self, event: RunEvent) -> None:
        out = sys.stdout
        if self.as_json:
            out.write(json.dumps(event.to_json(), ensure_ascii=False) + "\n")
        elif event.kind == TOKENS_EVENT:
            data = event.data
            call = (data.get("worker"), data.get("invocation"), data.get("call"), data.get("attempt"))
            if call != self._call:
                attempt = event_int(data.get("attempt"), 1)
                retry = f" (attempt {attempt})" if attempt > 1 else ""
                out.write(("\n" if self._call is not None else "") + f"[{data.get('worker')}]{retry} ")
                self._call = call
            out.write(str(data.get("text", "")))
        else:
            data = event.data
            patch = json.dumps(data.get("patch"), ensure_ascii=False)
            out.write(f"#{data.get('seq')} v{data.get('version')} {data.get('worker')}: {patch}\n")
        out.flush()

    def close(self) -> None:
        """End the last token line (text mode)."""
        if self._call is not None and not self.as_json:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self._call = None


async def run_streaming(runner: Any, mode: str, as_json: bool) -> RunResult:
    """Run ``runner`` to its end, printing its ``mode`` stream (subscribed before the run, so
    nothing is missed) as it goes."""
    import asyncio

    events = runner.events([mode])
    printer = StreamPrinter(as_json)

    async def consume() -> None:
        async for event in events:
            printer(event)

    consumer = asyncio.create_task(consume())
    try:
        result: RunResult = await runner.run()
    except BaseException:
        consumer.cancel()
        raise
    await consumer
    printer.close()
    return result
