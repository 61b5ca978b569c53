"""The agenda: priority then FIFO, de-duplication, requeue, cancel, JSON round-trip."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slateboard.scheduling import CLAIMED, PENDING, Agenda, Invocation


def inv(n: int, priority: int = 0, worker: str = "w", binding: tuple[str, ...] | None = None) -> Invocation:
    return Invocation(
        id=f"v{n}.0",
        worker=worker,
        priority=priority,
        order=n,
        binding=(str(n),) if binding is None else binding,
    )


def drain(agenda: Agenda) -> list[str]:
    out = []
    while (item := agenda.pop()) is not None:
        out.append(item.id)
    return out


def test_priority_then_fifo() -> None:
    agenda = Agenda()
    for item in [inv(0, 1), inv(1, 5), inv(2, 1), inv(3, 5), inv(4, 0)]:
        assert agenda.push(item)
    assert len(agenda) == 5
    assert [i.id for i in agenda.eligible()] == ["v1.0", "v3.0", "v0.0", "v2.0", "v4.0"]
    peeked = agenda.peek()
    assert peeked is not None and peeked.id == "v1.0"
    assert len(agenda) == 5
    assert drain(agenda) == ["v1.0", "v3.0", "v0.0", "v2.0", "v4.0"]
    assert agenda.pop() is None and agenda.peek() is None and not agenda


def test_dedup_by_worker_and_binding() -> None:
    agenda = Agenda()
    assert agenda.push(inv(0, worker="a", binding=("x",)))
    assert not agenda.push(inv(1, priority=9, worker="a", binding=("x",)))  # same key
    assert agenda.push(inv(2, worker="b", binding=("x",)))  # other worker
    assert agenda.push(inv(3, worker="a", binding=("y",)))  # other binding
    assert not agenda.push(replace(inv(0, worker="z"), binding=("q",)))  # same id
    assert len(agenda) == 3
    assert agenda.has_key(inv(0, worker="a", binding=("x",)).key)
    # a claimed (running) invocation does not block a new one with the same key
    first = agenda.pop()
    assert first is not None and first.status == CLAIMED
    assert agenda.push(inv(5, worker=first.worker, binding=first.binding))


def test_requeue_keeps_priority_and_order_and_bumps_attempts() -> None:
    agenda = Agenda([inv(0, 3), inv(1, 3), inv(2, 1)])
    first = agenda.pop()
    assert first is not None and first.id == "v0.0"
    # whatever copy is passed, the claimed original's priority and order are used
    tampered = replace(first, priority=-100, order=999)
    assert agenda.requeue(tampered, feedback="stale: /x changed")
    again = agenda.peek()
    assert again is not None
    assert (again.id, again.priority, again.order, again.attempts, again.status) == ("v0.0", 3, 0, 1, PENDING)
    assert again.feedback == "stale: /x changed"
    assert drain(agenda) == ["v0.0", "v1.0", "v2.0"]
    with pytest.raises(KeyError):
        agenda.requeue("v9.0")


def test_requeue_when_key_pending_again_is_dropped() -> None:
    agenda = Agenda([inv(0, worker="a", binding=("x",))])
    claimed = agenda.pop()
    assert claimed is not None
    assert agenda.push(inv(1, worker="a", binding=("x",)))
    assert not agenda.requeue(claimed.id)
    assert [i.id for i in agenda.eligible()] == ["v1.0"]
    assert agenda.get(claimed.id) is None


def test_cancel_take_complete() -> None:
    agenda = Agenda([inv(0), inv(1, 2), inv(2)])
    cancelled = agenda.cancel("v1.0")
    assert cancelled is not None and cancelled.id == "v1.0"
    assert agenda.cancel("v1.0") is None
    assert "v1.0" not in agenda
    taken = agenda.take("v2.0")
    assert taken is not None and taken.status == CLAIMED
    assert agenda.take("v2.0") is None
    assert [i.id for i in agenda.claimed] == ["v2.0"]
    assert agenda.complete("v2.0") is not None
    assert agenda.claimed == []
    assert drain(agenda) == ["v0.0"]
    # a cancelled id may be pushed again (with another priority) and is ordered by the new one
    agenda.push(inv(5, 0))
    assert agenda.push(inv(1, 9))
    agenda.cancel("v1.0")
    assert agenda.push(inv(1, -1))
    assert drain(agenda) == ["v5.0", "v1.0"]


def test_cancel_where() -> None:
    agenda = Agenda([replace(inv(0), meta={"stage": "plan"}), inv(1), replace(inv(2), meta={"stage": "plan"})])
    gone = agenda.cancel_where(lambda i: i.meta.get("stage") == "plan")
    assert [i.id for i in gone] == ["v0.0", "v2.0"]
    assert [i.id for i in agenda] == ["v1.0"]


def test_json_round_trip() -> None:
    agenda = Agenda([inv(0, 1), replace(inv(1, 4), feedback="f", meta={"k": [1]}), inv(2, 4)])
    claimed = agenda.pop()
    assert claimed is not None
    data = agenda.to_json()
    restored = Agenda.from_json(data)
    assert restored.to_json() == data
    assert [i.to_json() for i in restored.eligible()] == [i.to_json() for i in agenda.eligible()]
    assert restored.requeue(claimed.id)
    assert drain(restored) == ["v1.0", "v2.0", "v0.0"]
    dup = {"pending": [inv(0).to_json(), inv(0).to_json()], "claimed": []}
    with pytest.raises(ValueError):
        Agenda.from_json(dup)


# -- property: pop order and de-duplication ---------------------------------------------------
ops_strategy = st.lists(
    st.one_of(
        st.tuples(
            st.just("push"),
            st.integers(-3, 3),
            st.sampled_from(["a", "b", "c"]),
            st.sampled_from(["x", "y", "z"]),
        ),
        st.tuples(st.just("pop")),
        st.tuples(st.just("requeue")),
        st.tuples(st.just("cancel"), st.integers(0, 50)),
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(ops_strategy)
def test_pop_order_is_sorted_and_keys_unique(ops: list[tuple[object, ...]]) -> None:
    agenda = Agenda()
    model: dict[str, Invocation] = {}
    claimed: list[Invocation] = []
    counter = 0
    for op in ops:
        if op[0] == "push":
            _, prio, worker, binding = op
            item = Invocation(f"i{counter}", str(worker), int(str(prio)), counter, binding=(str(binding),))
            counter += 1
            added = agenda.push(item)
            assert added == all(m.key != item.key for m in model.values())
            if added:
                model[item.id] = item
        elif op[0] == "pop":
            got = agenda.pop()
            if not model:
                assert got is None
                continue
            assert got is not None
            best = min(model.values(), key=Invocation.sort_key)
            assert got.id == best.id
            assert got.sort_key() == best.sort_key()
            del model[got.id]
            claimed.append(got)
        elif op[0] == "requeue":
            if claimed:
                back = claimed.pop()
                ok = agenda.requeue(back.id)
                assert ok == all(m.key != back.key for m in model.values())
                if ok:
                    model[back.id] = replace(back, status=PENDING, attempts=back.attempts + 1)
        else:
            target = f"i{op[1]}"
            agenda.cancel(target)
            model.pop(target, None)
            claimed = [c for c in claimed if c.id != target]
        pending = agenda.eligible()
        assert len(agenda) == len(model) == len(pending)
        assert len({p.key for p in pending}) == len(pending)
        assert [p.sort_key() for p in pending] == sorted(p.sort_key() for p in pending)
        assert set(agenda.pending_keys) == {m.key for m in model.values()}
    # draining what is left yields sorted (-priority, order), with no further pushes
    rest = []
    while (left := agenda.pop()) is not None:
        rest.append(left.sort_key())
    assert rest == sorted(rest)


def test_a_runner_taking_by_id_leaves_bounded_garbage() -> None:
    """A runner takes its next invocation by id every step (the store leased it); each take
    leaves a dead heap entry. Every running board holds an agenda, so the dead entries stay
    few (at most twice the pending ones plus 8 when a push compacts them; one per take
    before), and the order is unchanged."""
    agenda = Agenda()
    agenda.push(inv(0, priority=-1))  # one invocation stays pending throughout
    for n in range(1, 1000):
        agenda.push(inv(n))
        taken = agenda.take(f"v{n}.0")
        assert taken is not None
        agenda.complete(taken.id)
        assert len(agenda._heap) <= 2 * (len(agenda) + 1) + 8  # as bounded when pushed, before this take
    assert drain(agenda) == ["v0.0"]


def test_taking_the_first_invocation_by_id_leaves_no_dead_entry() -> None:
    """The runner's usual step: one invocation pending, taken by id, the next one pushed. The
    taken entry was at the top of the heap, so the take drops it: a waiting board's agenda holds
    only live entries (before: up to eight dead ones per board until a push compacted them)."""
    agenda = Agenda()
    for n in range(50):
        agenda.push(inv(n))
        taken = agenda.take(f"v{n}.0")
        assert taken is not None
        agenda.complete(taken.id)
        assert agenda._heap == []
    agenda.push(inv(50, priority=-1))
    agenda.push(inv(51))
    assert agenda.take("v51.0") is not None  # the top: dropped; the other stays, live
    assert len(agenda._heap) == 1
    assert drain(agenda) == ["v50.0"]
