"""Batch timers: when a batch rule's timeout has passed, a ``timer`` record logs the firing.

A batch rule (``scheduling.gather``) fires with a partial batch ``seconds`` after the first event
it holds. Time is not in the log by itself, so the firing is: ``fire_timers`` appends one
``timer`` record per due batch, through ``StepEngine.transact`` (the one append path: compare-
and-set on the board's log, the invocation of the flushed batch pushed in the same transaction).
Replay then reads the record, never a clock, and gives the same records without waiting.

Who calls it: the single-process ``Runner`` (between steps, and while it waits for a timer with
nothing else to do), runner processes (``runtime.distributed``: after a step and in their sweep
of idle boards), and any other engine (a durable-execution one) through the two functions here:
``next_timer`` says when to wake up, ``fire_timers`` logs what is due. Several processes firing
the same timer at once append one record: the losers catch up, find the batch flushed, and
append nothing.
"""

from __future__ import annotations

from ..kernel.kernel import Decision
from ..kernel.record import EVENT_META, Record
from ..scheduling.rules import Scheduled, Scheduler
from ..vocabulary import TIMER_FIRED, TIMER_KIND
from .step import StepEngine, Transacted

__all__ = ["fire_due", "fire_timers", "next_timer", "wait_s"]


def next_timer(engine: StepEngine) -> float | None:
    """When the board's next batch timer is due (epoch seconds, the gathers' clock), or None
    when no batch waits for one."""
    return engine.scheduler.gathers.next_deadline()


async def fire_timers(engine: StepEngine, *, now: float | None = None) -> list[Record]:
    """Log every batch timer due at ``now`` (default: the gathers' clock): one ``timer`` record
    each, with the invocation of the batch it flushes. Returns the records appended (none when
    nothing was due, or another process fired it first). Takes the engine's lock."""
    appended: list[Record] = []
    async with engine.lock:
        at = engine.scheduler.gathers.clock() if now is None else now
        for rule in engine.scheduler.gathers.due(at):
            record = await _fire(engine, rule, at)
            if record is not None:
                appended.append(record)
    return appended


async def fire_due(engine: StepEngine) -> list[Record]:
    """``fire_timers`` when a timer is due now, else nothing (cheap: no lock taken)."""
    due = next_timer(engine)
    if due is None or due > engine.scheduler.gathers.clock():
        return []
    return await fire_timers(engine)


async def _fire(engine: StepEngine, rule: str, at: float) -> Record | None:
    def prepare() -> Decision | None:
        # Again at every attempt: after a lost compare-and-set another process may have fired it.
        if rule not in engine.scheduler.gathers.due(at):
            return None
        held = engine.scheduler.gathers.held(rule)
        reason = f"batch rule {rule!r}: timer fired with {held} event{'s' if held != 1 else ''}"
        return engine.kernel.action(TIMER_KIND, reason, meta={EVENT_META: TIMER_FIRED, "rule": rule})

    def schedule(scheduler: Scheduler, decision: Decision) -> Scheduled:
        return scheduler.prepare_timer(rule, decision.record.version, decision.record.seq, at)

    done = await engine.transact(prepare, schedule=schedule)
    if not isinstance(done, Transacted):
        return None
    pushed = [inv.id for inv in done.changes.push]
    engine.emit(TIMER_FIRED, rule=rule, seq=done.record.seq, invocations=list(pushed))
    return done.record


def wait_s(engine: StepEngine) -> float | None:
    """Seconds until the next timer is due (0 when overdue), or None when none is pending."""
    due = next_timer(engine)
    return None if due is None else max(0.0, due - engine.scheduler.gathers.clock())
