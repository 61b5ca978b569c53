"""The gathers are a fold over logged notes (``scheduling.gather``): a prepared schedule rolled
back leaves a join or a batch exactly as if its notes never came, so the live state of a runner
(which prepares, then commits or aborts) always equals the fold of the log a reload makes."""

from __future__ import annotations

from typing import Any

from compose_kit import shop
from hypothesis import given
from hypothesis import strategies as st

from slateboard.blueprint import compile_blueprint
from slateboard.scheduling.gather import Fired, Gathers, _Join

BLUEPRINT = compile_blueprint(
    shop(
        1,
        join={
            **shop(1)["rules"][0]["join"],
            "max_keys": 2,  # small, so eviction of open and fired keys is exercised
            "within_versions": 4,
        },
        alerts=1,
        batch={"size": 3, "seconds": 10},
    )
)
STEPS = st.lists(
    st.tuples(
        st.sampled_from(["ship", "digest"]),
        st.sampled_from(["a", "b", "c", "d"]),
        st.sampled_from(["order", "payment"]),
        st.booleans(),  # committed (else the append failed and the schedule is rolled back)
        st.booleans(),  # a timer note (batch only)
    ),
    max_size=40,
)


def _note(rule: str, key: str, part: str, version: int, timer: bool) -> dict[str, Any]:
    if rule == "digest":
        if timer:
            return {"rule": rule, "timer": True, "version": version, "at": float(version)}
        return {"rule": rule, "op": "add", "path": f"/alerts/{version}", "version": version, "at": float(version)}
    return {"rule": rule, "part": part, "key": key, "op": "add", "path": f"/x/{version}", "version": version}


def _shape(gathers: Gathers) -> list[Any]:
    """Every track as ordered lists: the order of keys decides which one is evicted first."""
    return [
        [list(t.open.items()), list(t.fired)] if isinstance(t, _Join) else [t.items, t.first_at, t.count]
        for t in gathers._tracks.values()
    ]


@given(STEPS)
def test_a_rolled_back_schedule_leaves_the_gathers_as_the_log_folds_them(steps: list[Any]) -> None:
    live, folded = Gathers(BLUEPRINT.rules), Gathers(BLUEPRINT.rules)
    fired_live: list[Fired | None] = []
    fired_fold: list[Fired | None] = []
    for version, (rule, key, part, committed, timer) in enumerate(steps, 1):
        note = _note(rule, key, part, version, timer)
        live.begin()
        fired = live.apply(note)
        if not committed:
            live.rollback()
            continue
        live.commit()
        fired_live.append(fired)
        fired_fold.append(folded.apply(note))
        assert _shape(live) == _shape(folded)
    assert fired_live == fired_fold
    assert _shape(live) == _shape(folded)
    assert live.held("ship") <= 2 and live.held("digest") < 3


@given(STEPS)
def test_each_key_fires_at_most_once_while_remembered(steps: list[Any]) -> None:
    gathers = Gathers(BLUEPRINT.rules)
    keys = [
        f.binding[1]
        for version, (_, key, part, _, _) in enumerate(steps, 1)
        if (f := gathers.apply(_note("ship", key, part, version, False))) is not None
    ]
    # max_keys=2 remembers the last two fired keys: no key fires twice within three firings
    assert all(len(set(keys[i : i + 3])) == len(keys[i : i + 3]) for i in range(len(keys)))
