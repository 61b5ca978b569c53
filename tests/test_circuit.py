"""The circuit policy: every trigger on logs built by a real kernel, at and below thresholds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

import pytest

from slateboard.blueprint.compile import compile_blueprint
from slateboard.kernel import Kernel, Proposal, Record, Usage
from slateboard.kernel.circuit import (
    CONTINUE,
    HALT,
    RETRY_WITH_FEEDBACK,
    SWITCH_WORKER,
    TIGHTEN_BUDGET,
    CircuitAction,
    CircuitPolicy,
    actions_in,
    circuit_summary,
)


class Log:
    """A board whose every record is kept, with helpers to produce each kind of record."""

    def __init__(self, *, limits: dict[str, Any] | None = None, budgets: int = 4000, **circuit: Any) -> None:
        self.bp = compile_blueprint(
            {
                "schema": {
                    "type": "object",
                    "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                    "additionalProperties": False,
                },
                "initial_state": {"x": 0, "y": 0},
                "workers": {
                    # they read what they write: a blind write of the value there is no no-op
                    "a": {"reads": ["/x", "/y"], "writes": ["/x", "/y"], "view_budget": budgets},
                    "b": {"reads": ["/x", "/y"], "writes": ["/x", "/y"]},
                },
                "circuit": circuit,
                "limits": limits or {},
            }
        )
        self.kernel = Kernel(self.bp)
        self.records: list[Record] = []
        self.policy = CircuitPolicy.from_blueprint(self.bp)
        self.counter = 1000

    def propose(self, worker: str, patch: Any, viewed: int | None = None) -> Record:
        d = self.kernel.submit(Proposal(worker, patch, viewed_version=viewed, usage=Usage(10, 5)))
        self.records.append(d.record)
        return d.record

    def accept(self, worker: str = "a", x: int | None = None) -> Record:
        if x is None:
            self.counter += 1
            x = self.counter
        rec = self.propose(worker, [{"op": "replace", "path": "/x", "value": x}])
        assert rec.outcome == "accepted", rec.reason
        return rec

    def reject(self, worker: str = "a", n: int = 1) -> None:
        for i in range(n):
            rec = self.propose(worker, [{"op": "replace", "path": "/x", "value": f"bad{i}"}])
            assert rec.outcome == "rejected" and rec.stage == "schema"

    def noop(self, worker: str = "a", n: int = 1) -> None:
        for _ in range(n):
            rec = self.propose(worker, [{"op": "replace", "path": "/x", "value": self.kernel.state["x"]}])
            assert rec.outcome == "noop"

    def stale(self, worker: str = "a") -> None:
        rec = self.propose(worker, [{"op": "replace", "path": "/x", "value": 7}], viewed=self.kernel.version - 1)
        assert rec.outcome == "rejected" and rec.stage == "stale", rec.reason

    def check(self, *, tokens: int = 0, steps: int = 0) -> CircuitAction:
        return self.policy.check(self.records, tokens_used=tokens, steps=steps)

    def log(self, action: CircuitAction) -> Record:
        assert action.logged
        d = self.kernel.action(kind="circuit", reason=action.reason, worker=action.worker, meta=action.to_record_meta())
        self.kernel.commit(d)
        self.records.append(d.record)
        return d.record


# -- budgets ----------------------------------------------------------------------------------
def test_step_budget_at_and_below_boundary() -> None:
    log = Log(limits={"max_steps": 5})
    log.accept()
    assert log.check(steps=4).kind == CONTINUE
    act = log.check(steps=5)
    assert (act.kind, act.trigger) == (HALT, "budget")
    assert act.details == {"trigger": "budget", "budget": "steps", "used": 5, "limit": 5}
    assert "max_steps=5" in act.reason


def test_token_budget_at_and_below_boundary() -> None:
    log = Log(limits={"max_tokens": 100})
    assert log.check(tokens=99).kind == CONTINUE
    act = log.check(tokens=100)
    assert (act.kind, act.details["budget"]) == (HALT, "tokens")
    assert Log().check(tokens=10**9).kind == CONTINUE  # no token limit by default


# -- cycles -----------------------------------------------------------------------------------
def test_cycle_a_b_a_halts_naming_versions() -> None:
    log = Log()
    log.accept(x=1)  # version 1: B
    assert log.check().kind == CONTINUE
    log.accept(x=0)  # version 2: back to A (the initial state, version 0)
    act = log.check()
    assert (act.kind, act.trigger) == (HALT, "cycle")
    assert act.details["versions"] == [0, 2]
    assert "version 2" in act.reason and "version 0" in act.reason
    assert act.worker == "a"


def test_cycle_window_boundary() -> None:
    # A -> B -> C -> A is a cycle of 3 transitions: seen with cycle_window=3, not with 2
    for window, expected in ((3, HALT), (2, CONTINUE)):
        log = Log(cycle_window=window)
        log.accept(x=1)
        log.accept(x=2)
        log.accept(x=0)
        assert log.check().kind == expected, window


def test_cycle_ignores_rejections_in_between() -> None:
    log = Log(max_consecutive_invalid=10)
    log.accept(x=1)
    log.reject("b", 2)
    log.accept(x=2)
    log.accept(x=1)
    act = log.check()
    assert act.kind == HALT and act.details["versions"] == [1, 3]


# -- stuck ------------------------------------------------------------------------------------
def test_stuck_at_and_below_boundary() -> None:
    log = Log(stuck_after=6, max_consecutive_invalid=10, max_noops=10)
    log.accept()
    for i in range(5):
        (log.reject if i % 2 else log.noop)("a" if i % 3 else "b")
    assert log.check().kind == CONTINUE
    log.noop("b")
    act = log.check()
    assert (act.kind, act.trigger) == (HALT, "stuck")
    assert act.details["proposals"] == 6
    assert act.details["since_seq"] == 2


# -- consecutive invalid ----------------------------------------------------------------------
def test_invalid_retry_with_feedback_then_escalate() -> None:
    log = Log(max_consecutive_invalid=3, retries=1, on_invalid="retry")
    log.accept()
    log.reject("a", 2)
    assert log.check().kind == CONTINUE
    log.reject("a")
    act = log.check()
    assert (act.kind, act.worker, act.trigger) == (RETRY_WITH_FEEDBACK, "a", "invalid")
    assert act.details["retry"] == 1 and act.details["streak"] == 3
    assert act.feedback is not None and act.feedback.count("[schema]") == 3
    assert all(r["stage"] == "schema" for r in act.details["rejections"])
    assert [r["seq"] for r in act.details["rejections"]] == [2, 3, 4]
    log.log(act)
    assert log.check().kind == CONTINUE  # the logged action ends the streak it handled
    log.reject("a", 2)
    assert log.check().kind == CONTINUE
    log.reject("a")
    act = log.check()
    assert act.kind == HALT and act.details["escalated"] is True and act.details["retries"] == 1
    assert "escalating to halt" in act.reason


def test_invalid_retries_zero_halts_immediately_and_more_retries_count_up() -> None:
    log = Log(max_consecutive_invalid=2, retries=0)
    log.reject("a", 2)
    assert log.check().kind == HALT
    log = Log(max_consecutive_invalid=2, retries=2)
    kinds = []
    for _ in range(3):
        log.reject("a", 2)
        act = log.check()
        kinds.append((act.kind, act.details.get("retry")))
        if act.kind != HALT:
            log.log(act)
    assert kinds == [(RETRY_WITH_FEEDBACK, 1), (RETRY_WITH_FEEDBACK, 2), (HALT, None)]


def test_success_resets_the_streak_and_the_retries() -> None:
    log = Log(max_consecutive_invalid=2, retries=1)
    log.reject("a", 2)
    log.log(log.check())
    log.accept("a")
    log.reject("a", 2)
    act = log.check()
    assert act.kind == RETRY_WITH_FEEDBACK and act.details["retry"] == 1
    # a no-op also breaks an invalid streak
    log = Log(max_consecutive_invalid=2)
    log.reject("a")
    log.noop("a")
    log.reject("a")
    assert log.check().kind == CONTINUE


def test_streaks_are_per_worker_and_skip_stale() -> None:
    log = Log(max_consecutive_invalid=3)
    log.accept("a")
    log.reject("a")
    log.accept("b")  # another worker's success does not break a's streak
    log.reject("a")
    log.stale("a")  # stale rejections are not the worker's fault: skipped
    assert log.check().kind == CONTINUE
    log.reject("b", 2)  # b's rejections do not extend a's streak
    assert log.check().kind == CONTINUE
    log.reject("a")
    act = log.check()
    assert act.kind == RETRY_WITH_FEEDBACK and act.worker == "a" and act.details["streak"] == 3


def test_invalid_switch_halt_and_tighten() -> None:
    log = Log(max_consecutive_invalid=2, on_invalid="switch")
    log.reject("a", 2)
    act = log.check()
    assert (act.kind, act.worker) == (SWITCH_WORKER, "a")
    log = Log(max_consecutive_invalid=2, on_invalid="halt", retries=5)
    log.reject("b", 2)
    act = log.check()
    assert (act.kind, act.worker, act.trigger) == (HALT, "b", "invalid")
    log = Log(max_consecutive_invalid=2, on_invalid="tighten", retries=3, budgets=1000)
    budgets = []
    for _ in range(4):
        log.reject("a", 2)
        act = log.check()
        budgets.append((act.kind, act.details.get("view_budget"), act.details.get("factor")))
        if act.kind != HALT:
            log.log(act)
    assert budgets == [
        (TIGHTEN_BUDGET, 500, 0.5),
        (TIGHTEN_BUDGET, 250, 0.25),
        (TIGHTEN_BUDGET, 125, 0.125),
        (HALT, None, None),
    ]


def test_tighten_never_goes_below_the_minimum_budget() -> None:
    log = Log(max_consecutive_invalid=1, on_invalid="tighten", retries=3, budgets=64)
    log.reject("a")
    assert log.check().details["view_budget"] == 64


# -- no-ops -----------------------------------------------------------------------------------
def test_noops_switch_then_halt() -> None:
    log = Log(max_noops=3, retries=1)
    log.noop("a", 2)
    assert log.check().kind == CONTINUE
    log.noop("a")
    act = log.check()
    assert (act.kind, act.worker, act.trigger) == (SWITCH_WORKER, "a", "noop")
    assert act.details["seqs"] == [1, 2, 3]
    log.log(act)
    assert log.check().kind == CONTINUE
    log.noop("a", 3)
    act = log.check()
    assert (act.kind, act.trigger) == (HALT, "noop")


def test_noop_streak_broken_by_rejection() -> None:
    log = Log(max_noops=2, max_consecutive_invalid=5)
    log.noop("a")
    log.reject("a")
    log.noop("a")
    assert log.check().kind == CONTINUE


# -- logging, determinism, bounded tail -------------------------------------------------------
def test_action_record_round_trip() -> None:
    log = Log(max_consecutive_invalid=1)
    log.reject("a")
    act = log.check()
    rec = log.log(act)
    assert (rec.kind, rec.outcome, rec.worker, rec.reason) == ("circuit", "action", "a", act.reason)
    assert rec.meta == act.to_record_meta()
    assert CircuitAction.from_record(rec) == act
    assert CircuitAction.from_record(Record.from_bytes(rec.to_bytes())) == act
    assert CircuitAction.from_record(log.records[0]) is None
    assert actions_in(log.records) == [act]
    with pytest.raises(ValueError):
        CircuitAction("explode")


def build_mixed(seed_shift: int = 0) -> Log:
    log = Log(max_consecutive_invalid=3, max_noops=3, stuck_after=9, retries=2)
    for i in range(40):
        step = (i * 7 + seed_shift) % 5
        worker = "ab"[i % 2]
        if step == 0:
            log.accept(worker)
        elif step in (1, 2):
            log.reject(worker)
        else:
            log.noop(worker)
        act = log.check()
        if act.logged and act.kind != HALT:
            log.log(act)
    return log


def test_determinism_same_log_same_action() -> None:
    one, two = build_mixed(), build_mixed()
    assert [r.hash for r in one.records] == [r.hash for r in two.records]
    for n in range(len(one.records) + 1):
        assert one.policy.check(one.records[:n], tokens_used=3, steps=n) == two.policy.check(
            two.records[:n], tokens_used=3, steps=n
        )


def _alternating_log() -> Log:
    log = Log(max_alternations=4, retries=1, max_consecutive_invalid=2)
    for i in range(14):
        log.accept("ab"[i % 2])
        if i % 5 == 4:
            log.reject("a", n=2)
        act = log.check()
        if act.logged and act.kind != HALT:
            log.log(act)
    return log


@pytest.mark.parametrize("make", [lambda: build_mixed(0), lambda: build_mixed(3), _alternating_log])
def test_the_policy_decides_the_same_on_summaries(make: Any) -> None:
    """What a runner keeps for the policy (circuit_summary) decides exactly as the full
    records do, at every prefix of logs with every trigger; the summaries hold no diagnostics,
    event or patch value."""
    log = make()
    summaries = [circuit_summary(r) for r in log.records]
    assert {a.kind for a in actions_in(log.records)} - {CONTINUE}  # the log did trigger actions
    for n in range(len(log.records) + 1):
        for tokens, steps in ((0, n), (10**9, 0)):
            assert log.policy.check(summaries[:n], tokens_used=tokens, steps=steps) == log.policy.check(
                log.records[:n], tokens_used=tokens, steps=steps
            )
    for full, short in zip(log.records, summaries, strict=True):
        assert (short.seq, short.outcome, short.worker, short.reason) == (
            full.seq,
            full.outcome,
            full.worker,
            full.reason,
        )
        if full.kind == "proposal":
            assert short.meta == {} and short.event is None and short.usage.tokens_in == 0
            assert short.hash == "" != full.hash  # a summary is never taken for a log record
            assert short.patch is None or '"value"' not in short.patch
        else:
            assert short is full


def test_summaries_of_alike_proposals_share_their_paths_and_meta() -> None:
    """A running board keeps up to 64 summaries, most of them alike: two accepted proposals
    with the same ops and paths (values differ) share one paths text, and every summary shares
    one empty meta, so the window's memory does not grow with a text and a dict per step."""
    log = build_mixed(0)
    accepted = [circuit_summary(r) for r in log.records if r.kind == "proposal" and r.accepted]
    by_text: dict[str, Any] = {}
    for short in accepted:
        assert short.patch is not None
        assert by_text.setdefault(short.patch, short.patch) is short.patch
    assert len(by_text) < len(accepted)  # the log does repeat a patch shape
    assert len({id(s.meta) for s in accepted}) == 1


class CountingSeq(Sequence[Record]):
    """A sequence that records which indices were read."""

    def __init__(self, items: list[Record]) -> None:
        self.items = items
        self.read: set[int] = set()

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, i: int) -> Record: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Record]: ...
    def __getitem__(self, i: int | slice) -> Record | Sequence[Record]:
        if isinstance(i, slice):
            raise AssertionError("the policy must not slice the whole log")
        self.read.add(i if i >= 0 else len(self.items) + i)
        return self.items[i]


def test_bounded_tail() -> None:
    log = build_mixed()
    for _ in range(3):
        log.accept("a", x=1)
        log.accept("a", x=2)  # an old cycle, far back
    for _ in range(200):
        log.accept("b")
    seq = CountingSeq(log.records)
    act = log.policy.check(seq, tokens_used=0, steps=0)
    assert act.kind == CONTINUE  # the cycle is out of the window
    n = len(log.records)
    assert seq.read and min(seq.read) >= n - log.policy.tail
    assert len(seq.read) <= log.policy.tail
    for cut in (1, 5, 17, 60):
        recs = log.records[: n - cut]
        tail = recs[-log.policy.tail :]
        assert log.policy.check(recs, tokens_used=0, steps=0) == log.policy.check(tail, tokens_used=0, steps=0)


def test_tail_size_follows_the_spec() -> None:
    policy = Log(stuck_after=12, cycle_window=8, max_consecutive_invalid=3, max_noops=3, retries=1).policy
    assert policy.tail == 4 * 12
    policy = Log(stuck_after=2, cycle_window=30).policy
    assert policy.tail == 4 * 31


def test_empty_log_continues() -> None:
    log = Log()
    assert log.check() == CircuitAction(CONTINUE)
    assert not log.check().logged and log.check().trigger is None


# -- hysteresis: A-B-A-B alternation on the same paths ----------------------------------------
def test_alternation_a_b_a_b_switches_then_halts() -> None:
    log = Log(max_alternations=4, retries=1, cycle_window=2)
    for worker in ("a", "b", "a"):
        log.accept(worker)
    assert log.check().kind == CONTINUE  # A-B-A is not yet four turns
    log.accept("b")
    action = log.check()
    assert action.kind == SWITCH_WORKER and action.worker == "b" and action.trigger == "alternation"
    assert action.details["paths"] == ["/x"] and action.details["workers"] == ["a", "b"]
    assert "'a' and 'b' overwrote /x in turn 4 times" in action.reason
    log.log(action)
    assert log.check().kind == CONTINUE  # the logged action ends the streak it handled
    for worker in ("a", "b", "a"):
        log.accept(worker)
    assert log.check().kind == CONTINUE
    log.accept("b")
    again = log.check()
    assert again.kind == HALT and again.trigger == "alternation" and again.details["escalated"] is True


def test_alternation_needs_two_workers_on_common_paths() -> None:
    log = Log(max_alternations=4, cycle_window=2)
    for worker in ("a", "a", "a", "a"):
        log.accept(worker)
    assert log.check().kind == CONTINUE  # one worker: not an alternation
    other = Log(max_alternations=4, cycle_window=2)
    for i, worker in enumerate(("a", "b", "a", "b")):
        path = "/x" if worker == "a" else "/y"
        rec = other.propose(worker, [{"op": "replace", "path": path, "value": 100 + i}])
        assert rec.outcome == "accepted"
    assert other.check().kind == CONTINUE  # different paths: they do not undo each other
    off = Log(max_alternations=0, cycle_window=2)
    for worker in ("a", "b", "a", "b", "a", "b"):
        off.accept(worker)
    assert off.check().kind == CONTINUE  # 0 turns the check off


def test_cycle_never_compares_a_version_with_itself() -> None:
    # A record given twice (a runner catching up with what it already counted) is one
    # transition, not a cycle: the state at version 5 does not "repeat" version 5.
    log = Log(cycle_window=8)
    for x in range(1, 6):
        log.accept(x=x)
    fifth = log.records[-1]
    assert fifth.version == 5
    log.records.append(fifth)
    assert log.check().kind == CONTINUE
    log.records.insert(2, log.records[2])  # a duplicate deeper in the window too
    assert log.check().kind == CONTINUE
    log.accept(x=3)  # a real revisit is still caught, naming two distinct versions
    act = log.check()
    assert (act.kind, act.trigger) == (HALT, "cycle")
    assert act.details["versions"] == [3, 6]
