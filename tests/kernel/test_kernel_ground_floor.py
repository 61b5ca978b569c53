"""The kernel's public pointer helpers and its dependency on a protocol, not on ``blueprint``.

``resolve``/``MISSING`` replaced three hand-written pointer walks; they must agree with the
RFC 6901 reference walk of the test kit on every pointer. And the kernel must run on any object
shaped like ``KernelBlueprint``: a bare stand-in that copies only the protocol's members from a
compiled blueprint gets exactly the decisions the compiled blueprint gets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kernel_testkit import SMALL_JSON, RefError, existing_pointers, kernel_settings, ref_get, ref_parse_pointer

from slateboard.blueprint import CompiledBlueprint, compile_blueprint
from slateboard.kernel import (
    MISSING,
    CompiledInvariant,
    Kernel,
    KernelBlueprint,
    Proposal,
    WorkerContract,
    expand,
    parse_pointer,
    replay,
    resolve,
)
from slateboard.kernel.circuit import CircuitPolicy
from slateboard.kernel.pointer import Pattern, PointerError
from slateboard.kernel.protocol import BlueprintTerms
from slateboard.kernel.schema import SchemaIndex


@given(SMALL_JSON, st.data())
@kernel_settings(200)
def test_resolve_agrees_with_the_reference_walk(doc: Any, data: st.DataObject) -> None:
    pointers = [*existing_pointers(doc), "/nope", "/a/0/zz", "/0", "/01", "/-"]
    pointer = data.draw(st.sampled_from(pointers))
    try:
        want = ref_get(doc, ref_parse_pointer(pointer))
    except RefError:
        want = MISSING
    for form in (pointer, parse_pointer(pointer)):
        found = resolve(doc, form)
        if want is MISSING:
            assert found is MISSING
        else:
            assert found is not MISSING and found == want


def test_resolve_returns_the_live_node_and_missing_is_not_none() -> None:
    doc: dict[str, Any] = {"a": [{"b": None}], "n": 0}
    assert resolve(doc, "/a/0/b") is None  # a null is a node, not a miss
    assert resolve(doc, "/a/0/c") is MISSING
    assert resolve(doc, "/n/x") is MISSING  # a step into a scalar
    assert resolve(doc, "/a/00") is MISSING  # not a canonical array index
    assert resolve(doc, "") is doc
    assert resolve(doc, "/a/0") is doc["a"][0]
    assert repr(MISSING) == "MISSING" and not isinstance(MISSING, (dict, list, str, int, float, type(None)))
    with pytest.raises(PointerError):
        resolve(doc, "no-slash")


def test_expand_lists_the_existing_nodes_a_pattern_names() -> None:
    doc = {"claims": [{"s": 1}, {"t": 2}, {"s": 3}], "m": {"x": {"s": 4}}}
    assert list(expand(doc, ("claims", "*", "s"))) == [("claims", "0", "s"), ("claims", "2", "s")]
    assert list(expand(doc, ("m", "*", "s"))) == [("m", "x", "s")]
    assert list(expand(doc, ("claims", "7"))) == []


BLUEPRINT: dict[str, Any] = {
    "schema": {
        "type": "object",
        "properties": {
            "notes": {"type": "array", "items": {"type": "string", "maxLength": 8}},
            "count": {"type": "integer"},
        },
    },
    "initial_state": {"notes": [], "count": 0},
    "workers": {"w": {"reads": ["/notes", "/count"], "writes": ["/notes/-", "/count"]}},
    "invariants": [{"at": "/count", "rule": "self >= oldSelf", "message": "count never goes down"}],
    "approval": [],
}


@dataclass(frozen=True)
class StandIn:
    """Only the members KernelBlueprint declares, nothing else a CompiledBlueprint has."""

    spec: BlueprintTerms
    schema: SchemaIndex
    workers: dict[str, WorkerContract]
    approval: tuple[Pattern, ...]
    all_invariants: tuple[CompiledInvariant, ...]
    digest: str
    initial: Any

    def initial_state(self) -> Any:
        return {"notes": list(self.initial["notes"]), "count": self.initial["count"]}


def _stand_in(bp: CompiledBlueprint) -> KernelBlueprint:
    return StandIn(
        bp.spec,
        bp.schema,
        dict(bp.workers),
        tuple(bp.approval),
        tuple(bp.all_invariants),
        bp.digest,
        bp.initial_state(),
    )


PATCHES = [
    [{"op": "add", "path": "/notes/-", "value": "hi"}],
    [{"op": "add", "path": "/notes/-", "value": "far too long"}],  # schema
    [{"op": "replace", "path": "/notes/0", "value": "x"}],  # authorise
    [{"op": "replace", "path": "/count", "value": 2}],
    [{"op": "replace", "path": "/count", "value": 1}],  # invariants
    [{"op": "replace", "path": "/count", "value": 2}],  # noop
    [{"op": "test", "path": "/count", "value": 9}, {"op": "replace", "path": "/count", "value": 3}],  # preconditions
]


def test_the_kernel_runs_on_anything_shaped_like_the_protocol() -> None:
    bp = compile_blueprint(BLUEPRINT)
    real, bare = Kernel(bp), Kernel(_stand_in(bp))
    got, log = [], []
    for patch in PATCHES:
        a, b = real.submit(Proposal("w", patch)), bare.submit(Proposal("w", patch))
        log.append(a.record)
        assert (a.record.outcome, a.stage, a.reason) == (b.record.outcome, b.stage, b.reason)
        assert a.record.hash == b.record.hash
        got.append(a.stage or a.record.outcome)
    assert got == ["accepted", "schema", "authorise", "accepted", "invariants", "noop", "preconditions"]
    assert real.state == bare.state == {"notes": ["hi"], "count": 2}
    # Replay (re-running every proposal) and the circuit policy need no more than the protocol.
    report = replay(_stand_in(bp), bp.initial_state(), log, revalidate=True)
    assert report.ok and report.checked == len(PATCHES) and report.state == real.state
    assert CircuitPolicy.from_blueprint(_stand_in(bp)).view_budgets == {"w": 4000}
