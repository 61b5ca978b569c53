"""Catching up with the store counts every record once: a runner that reads again a record it
already counted (loaded, appended, or caught up on) never feeds it to the circuit twice."""

from __future__ import annotations

from slateboard.blueprint.compile import compile_blueprint
from slateboard.kernel import Kernel, Proposal, Usage
from slateboard.runtime.accounting import Accounts


def _records(n: int) -> list:  # type: ignore[type-arg]
    bp = compile_blueprint(
        {
            "schema": {"type": "object", "properties": {"x": {"type": "integer"}}},
            "initial_state": {"x": 0},
            "workers": {"a": {"reads": ["/x"], "writes": ["/x"]}},
        }
    )
    kernel = Kernel(bp)
    out = []
    for x in range(1, n + 1):
        d = kernel.submit(Proposal("a", [{"op": "replace", "path": "/x", "value": x}], usage=Usage(10, 5)))
        out.append(d.record)
    return out


def test_accounts_note_each_record_once_by_seq() -> None:
    recs = _records(4)
    accounts = Accounts.of(recs[:3], tail_size=16)
    for rec in recs[2:]:  # a catch-up that starts one record early
        accounts.note(rec)
    assert [r.seq for r in accounts.tail] == [r.seq for r in recs]
    assert accounts.steps == 4
    assert accounts.tokens == 4 * 15
    assert [r.seq for r in accounts.history] == [r.seq for r in recs]
