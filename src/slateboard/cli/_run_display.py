"""What ``slateboard run|resume`` shows on a terminal: the live panel fed by the runner's events,
and the answer and audit summary after the run.

The live panel counts from events only (never by polling the store); the summary is read back
from the store, so it is the audit trail, not the panel's own counts.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.pretty import Pretty
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from ..models.pricing import format_cost
from ..progress import follow
from ..vocabulary import (
    CIRCUIT_ACTION,
    END_EXHAUSTED,
    END_FAILED,
    END_PAUSED,
    INVOCATION_STARTED,
    OUTCOME_ACCEPTED,
    OUTCOME_ACTION,
    OUTCOME_NOOP,
    OUTCOME_REJECTED,
    PROPOSAL_DECIDED,
    RUN_ENDED,
    RUN_STARTED,
)
from ._common import cell, console, store_hint, store_is_ephemeral
from ._run_stream import event_int

if TYPE_CHECKING:
    from ..kernel.record import Record
    from ..runtime import RunEvent, RunResult
    from ..stores.base import BoardInfo

_RECENT = 6
# An event's outcome is any string (a listener reads it off the event's data), hence ``str`` keys.
_STYLES: dict[str, str] = {OUTCOME_ACCEPTED: "green", OUTCOME_REJECTED: "red"}


class RunDisplay:
    """What the live display shows, updated from run events (thread-safe: rich refreshes it
    from its own thread)."""

    def __init__(self, board_id: str, name: str, max_steps: int, parallel: int | str) -> None:
        self.board_id = board_id
        self.name = name
        self.max_steps = max_steps
        self.parallel = parallel
        self.started = time.monotonic()
        self.finished: float | None = None
        self.steps = 0
        self.version = 0
        self.accepted = 0
        self.noops = 0
        self.rejected: Counter[str] = Counter()
        self.tokens = 0
        self.running: dict[str, str] = {}
        self.recent: deque[tuple[int, str, str, str, str]] = deque(maxlen=_RECENT)
        self.circuit: deque[str] = deque(maxlen=3)
        self.end_reason: str | None = None
        self._lock = threading.Lock()
        self._spinner = Spinner("dots")

    def feed(self, event: RunEvent) -> None:
        """Take one run event into account."""
        d = event.data
        with self._lock:
            if event.kind == RUN_STARTED:
                self.version = event_int(d.get("version"))
            elif event.kind == INVOCATION_STARTED:
                self.running[str(d.get("invocation"))] = str(d.get("worker"))
            elif event.kind == PROPOSAL_DECIDED:
                self.running.pop(str(d.get("invocation")), None)
                self.steps += 1
                outcome = str(d.get("outcome"))
                stage = str(d.get("stage") or "")
                if outcome == OUTCOME_ACCEPTED:
                    self.accepted += 1
                elif outcome == OUTCOME_REJECTED:
                    self.rejected[stage or "-"] += 1
                elif outcome == OUTCOME_NOOP:
                    self.noops += 1
                self.version = event_int(d.get("version"))
                self.tokens = event_int(d.get("tokens"))
                reason = str(d.get("reason") or "")
                self.recent.append((event_int(d.get("seq")), str(d.get("worker")), outcome, stage, reason))
            elif event.kind == CIRCUIT_ACTION:
                who = f" {d.get('worker')}" if d.get("worker") else ""
                self.circuit.append(f"{d.get('action')}{who}: {d.get('reason') or ''}")
            elif event.kind == RUN_ENDED:
                self.end_reason = str(d.get("reason"))
                self.version = event_int(d.get("version"), self.version)
                self.finished = time.monotonic()
                self.running.clear()

    def __rich__(self) -> RenderableType:
        with self._lock:
            return self._render()

    def _render(self) -> RenderableType:
        elapsed = (self.finished or time.monotonic()) - self.started
        head = Table.grid(padding=(0, 2))
        for _ in range(5):
            head.add_column()
        rejected = sum(self.rejected.values())
        by_stage = ", ".join(f"{s} {n}" for s, n in sorted(self.rejected.items()))
        head.add_row(
            f"step [bold]{self.steps}[/]/{self.max_steps}",
            f"version [bold]{self.version}[/]",
            f"accepted [green]{self.accepted}[/]",
            f"rejected [red]{rejected}[/]" + (f" ({by_stage})" if by_stage else ""),
            f"tokens {self.tokens:,}  {elapsed:.1f}s",
        )
        parts: list[RenderableType] = [head]
        if self.end_reason is None:
            workers = ", ".join(sorted(self.running.values())) or "choosing the next invocation"
            status = Table.grid(padding=(0, 1))
            status.add_row(self._spinner, Text(f"running: {workers}"))
            parts.append(status)
        if self.recent:
            table = Table(box=None, padding=(0, 1), show_edge=False, pad_edge=False)
            table.add_column("seq", justify="right", style="dim", no_wrap=True)
            table.add_column("worker", no_wrap=True)
            table.add_column("outcome", no_wrap=True)
            table.add_column("stage", no_wrap=True)
            table.add_column("reason")
            for seq, worker, outcome, stage, reason in self.recent:
                style = _STYLES.get(outcome, "yellow")
                table.add_row(str(seq), worker, Text(outcome, style=style), stage or "-", cell(reason))
            parts.append(table)
        for line in self.circuit:
            parts.append(cell(f"circuit: {line}", style="yellow"))
        if self.end_reason is not None:
            from ..status import end_status

            ended = end_status(None, self.end_reason)
            style = {END_FAILED: "red", END_EXHAUSTED: "yellow", END_PAUSED: "yellow"}.get(ended, "bold")
            parts.append(cell(f"ended: {self.end_reason}", style=style))
        # expand=False: piped, the console is PIPED_WIDTH wide and a panel would fill all of it
        return Panel(
            Group(*parts),
            title=f"slateboard run · {self.name} · board {self.board_id}",
            title_align="left",
            expand=False,
        )


async def run_with_display(runner: Any, display: RunDisplay) -> RunResult:
    """Run ``runner`` to its end under the live panel ``display`` (fed by its events)."""
    out = console()
    with Live(display, console=out, refresh_per_second=8, transient=False, redirect_stderr=False):
        return await follow(runner, display.feed)


def print_summary(
    result: RunResult, records: list[Record], info: BoardInfo, store: str | None, *, has_answer: bool
) -> None:
    """Print the answer, the audit panel (records by outcome, rejections by stage and reason,
    tokens and cost), tokens by component and worker, and how to inspect the board."""
    out = console()
    out.print()
    if not has_answer:
        out.print("[bold]Answer:[/] none (the blueprint names no answer path)")
    elif result.answer is None:
        out.print("[bold]Answer:[/] none on the board")
    elif isinstance(result.answer, str):
        out.print("[bold]Answer:[/]", Text(result.answer))
    else:
        out.print("[bold]Answer:[/]")
        out.print(Pretty(result.answer))
    outcomes = Counter(r.outcome for r in records)
    stages = Counter(r.stage or "-" for r in records if r.outcome == OUTCOME_REJECTED)
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    grid.add_row("board", f"{info.board_id} ({info.name}), {result.end_status}: {result.end_reason}")
    grid.add_row("version", str(result.version))
    counts = ", ".join(
        f"{outcomes[k]} {k}" for k in (OUTCOME_ACCEPTED, OUTCOME_REJECTED, OUTCOME_NOOP, OUTCOME_ACTION) if outcomes[k]
    )
    grid.add_row("records", f"{len(records)}" + (f": {counts}" if counts else ""))
    accepted = Counter(r.worker for r in records if r.outcome == OUTCOME_ACCEPTED)
    if accepted:
        grid.add_row("accepted", ", ".join(f"{w} {n}" for w, n in accepted.items()))
    if stages:
        grid.add_row("rejected by stage", ", ".join(f"{s} {n}" for s, n in sorted(stages.items())))
        # What the kernel refused and why: each distinct reason once, with how often.
        reasons = Counter(f"[{r.worker}] {r.stage}: {r.reason}" for r in records if r.outcome == OUTCOME_REJECTED)
        shown = [Text(f"{n}x {why}" if n > 1 else why) for why, n in reasons.most_common(5)]
        more = len(reasons) - len(shown)
        grid.add_row("rejections", Group(*shown, *([Text(f"... and {more} more reason(s)")] if more > 0 else [])))
    grid.add_row("tokens", f"{result.total_tokens:,}")
    grid.add_row("cost", format_cost(result.cost_usd))
    out.print(Panel(grid, title="Audit", title_align="left", expand=False))
    for title, usage, costs in (
        ("component", result.usage, result.cost_by_component),
        ("worker", result.usage_by_worker, result.cost_by_worker),
    ):
        if not usage:
            continue
        table = Table(title=f"tokens by {title}", title_justify="left", box=None, pad_edge=False)
        table.add_column(title)
        table.add_column("in", justify="right")
        table.add_column("out", justify="right")
        # the prompt-cache columns only where a provider reported cached tokens
        cached = any(u.cache_read or u.cache_write for u in usage.values())
        if cached:
            table.add_column("cache read", justify="right")
            table.add_column("cache write", justify="right")
        table.add_column("calls", justify="right")
        table.add_column("cost", justify="right")
        for key, u in sorted(usage.items()):
            caches = [f"{u.cache_read:,}", f"{u.cache_write:,}"] if cached else []
            row = [
                key,
                f"{u.tokens_in:,}",
                f"{u.tokens_out:,}",
                *caches,
                str(u.calls),
                format_cost(costs.get(key, 0.0)),
            ]
            table.add_row(*row)
        out.print(table)
    if store is not None and store_is_ephemeral(store):
        out.print(Text(f"the board lived in {store}, in this process's memory: it is gone now", style="dim"))
        return
    hint = store_hint(store)
    out.print("inspect with:", style="dim")
    for cmd in ("log", "show", "replay"):
        extra = " --verify" if cmd == "replay" else ""
        out.print(Text(f"  slateboard {cmd} {info.board_id}{extra}{hint}", style="dim"), soft_wrap=True)
