"""Contract-constrained decoding of identities and references: a new array item is offered only
with an id its siblings do not use, an ``x-refers-to`` node only with values found on the board,
and JSON-safe string patterns stay within what llama.cpp's grammar compiler accepts. The kernel
accepts what the derived schema offers (checked against the real kernel)."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema_rs

from slateboard.blueprint import compile_blueprint
from slateboard.blueprint.templates import load_template
from slateboard.kernel import Kernel, Proposal
from slateboard.workers.constrain import PATCH_KEY, proposal_schema
from slateboard.workers.constrain._fragments import SAFE_MAX_LENGTH


def _value(schema: dict[str, Any], path: str, op: str = "add") -> Any:
    items = schema["properties"][PATCH_KEY]["items"]
    for v in items.get("anyOf", [items]):
        props = v["properties"]
        if props["op"]["const"] == op and path in props["path"].get("enum", ()):
            return props.get("value")
    raise AssertionError(f"no {op} at {path} in {schema}")


def _blueprint(id_schema: dict[str, Any]) -> Any:
    return compile_blueprint(
        {
            "schema": {
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["id"],
                            "properties": {"id": id_schema, "note": {"type": "string"}},
                        },
                    },
                    "links": {
                        "type": "array",
                        "items": {"type": "string", "pattern": "^k[0-9]+$", "x-refers-to": "/items/*/id"},
                    },
                },
            },
            "initial_state": {"items": [], "links": []},
            "workers": {
                "w": {"reads": ["/items", "/links"], "writes": ["/items/-", "/items/*", "/links/-"], "ops": ["add"]}
            },
        }
    )


def test_a_new_item_gets_the_next_free_numbered_id() -> None:
    bp = load_template("investigation")
    state = {"question": "q", "hypotheses": [], "evidence": [], "critiques": []}
    for expected in ("h1", "h2", "h3"):
        derived = proposal_schema(bp, "hypothesis", state)
        assert derived is not None
        value = _value(derived.schema, "/hypotheses/-")
        assert value["properties"]["id"] == {"type": "string", "const": expected}
        kernel = Kernel(bp, copy.deepcopy(state))
        decision = kernel.submit(
            Proposal("hypothesis", [{"op": "add", "path": "/hypotheses/-", "value": {"id": expected, "text": "t"}}])
        )
        assert decision.accepted, decision.reason
        state = kernel.state
    # hypotheses allow 3 items: no append is offered once they are there
    assert proposal_schema(bp, "hypothesis", state) is None


def test_ids_skip_taken_numbers_and_other_names() -> None:
    bp = _blueprint({"type": "string", "pattern": "^k[0-9]+$"})
    state = {"items": [{"id": "k1"}, {"id": "k7"}, {"id": "x9"}, {"note": "no id"}], "links": []}
    derived = proposal_schema(bp, "w", state)
    assert derived is not None
    assert _value(derived.schema, "/items/-")["properties"]["id"]["const"] == "k8"
    # an add at an existing index inserts a new item: it gets a fresh id too
    assert _value(derived.schema, "/items/0")["properties"]["id"]["const"] == "k8"


def test_enum_const_and_integer_ids() -> None:
    state = {"items": [{"id": "a"}, {"id": 3}], "links": []}
    derived = proposal_schema(_blueprint({"enum": ["a", "b", "c"]}), "w", state)
    assert derived is not None and _value(derived.schema, "/items/-")["properties"]["id"] == {"enum": ["b", "c"]}
    derived = proposal_schema(_blueprint({"type": "integer", "minimum": 1}), "w", state)
    assert derived is not None and _value(derived.schema, "/items/-")["properties"]["id"] == {
        "type": "integer",
        "const": 4,
    }
    # every id taken: no new item can be offered, the rest of the contract still is
    full = proposal_schema(_blueprint({"const": "a"}), "w", state)
    assert full is not None
    items = full.schema["properties"][PATCH_KEY]["items"]
    paths = {p for v in items.get("anyOf", [items]) for p in v["properties"]["path"]["enum"]}
    assert paths == {"/links/-"}
    # an id schema it cannot narrow (free text) is left to the kernel
    free = proposal_schema(_blueprint({"type": "string", "minLength": 2}), "w", state, fresh_ids=True)
    assert free is not None and _value(free.schema, "/items/-")["properties"]["id"]["minLength"] == 2
    off = proposal_schema(_blueprint({"type": "string", "pattern": "^k[0-9]+$"}), "w", state, fresh_ids=False)
    assert off is not None and _value(off.schema, "/items/-")["properties"]["id"] == {
        "type": "string",
        "pattern": "^k[0-9]+$",
    }


def test_references_offer_the_values_on_the_board() -> None:
    bp = _blueprint({"type": "string"})
    empty = proposal_schema(bp, "w", {"items": [], "links": []})
    assert empty is not None
    # nothing to refer to yet: the node stays as the state schema has it (the kernel judges)
    assert _value(empty.schema, "/links/-") == {"type": "string", "pattern": "^k[0-9]+$"}
    state = {"items": [{"id": "k1"}, {"id": "zz"}, {"id": "k2"}, {"id": "k1"}], "links": []}
    derived = proposal_schema(bp, "w", state)
    assert derived is not None and not derived.truncated
    # only values valid for the node (the pattern), once each, in board order
    assert _value(derived.schema, "/links/-") == {"enum": ["k1", "k2"]}
    cut = proposal_schema(bp, "w", state, max_enum=1)
    assert cut is not None and cut.truncated and _value(cut.schema, "/links/-") == {"enum": ["k2"]}
    validator = jsonschema_rs.validator_for(derived.schema)
    assert validator.is_valid({PATCH_KEY: [{"op": "add", "path": "/links/-", "value": "k2"}]})
    assert not validator.is_valid({PATCH_KEY: [{"op": "add", "path": "/links/-", "value": "k3"}]})


def test_template_references_are_accepted_by_the_kernel() -> None:
    bp = load_template("investigation")
    state = {
        "question": "q",
        "hypotheses": [{"id": "h1", "text": "a"}, {"id": "h2", "text": "b"}],
        "evidence": [],
        "critiques": [],
    }
    derived = proposal_schema(bp, "evidence", state)
    assert derived is not None
    value = _value(derived.schema, "/evidence/-")["properties"]
    assert value["hypothesis"] == {"enum": ["h1", "h2"]} and value["id"]["const"] == "ev1"
    for ref in value["hypothesis"]["enum"]:
        ev = {"id": "ev1", "hypothesis": ref, "stance": "supports", "text": "t"}
        assert (
            Kernel(bp, copy.deepcopy(state))
            .submit(Proposal("evidence", [{"op": "add", "path": "/evidence/-", "value": ev}]))
            .accepted
        )
    # the kernel still rejects a reference the decoding would not offer
    bad = {"id": "ev1", "hypothesis": "h5", "stance": "supports", "text": "t"}
    decision = Kernel(bp, copy.deepcopy(state)).submit(
        Proposal("evidence", [{"op": "add", "path": "/evidence/-", "value": bad}])
    )
    assert decision.stage == "invariants"


def test_json_safe_patterns_stay_within_the_grammar_limit() -> None:
    bp = load_template("investigation")
    state = {"question": "q", "hypotheses": [{"id": "h1", "text": "a"}], "evidence": [], "critiques": []}
    spec = bp.spec.to_json()
    spec["schema"]["properties"]["answer"]["maxLength"] = 5000
    big = compile_blueprint(spec)
    derived = proposal_schema(big, "decider", state, json_safe_strings=True)
    assert derived is not None
    answer = _value(derived.schema, "/answer")
    assert answer["maxLength"] == 5000 and answer["pattern"].endswith(f"{{1,{SAFE_MAX_LENGTH}}}$")
    validator = jsonschema_rs.validator_for(derived.schema)
    assert validator.is_valid({PATCH_KEY: [{"op": "add", "path": "/answer", "value": "x" * SAFE_MAX_LENGTH}]})
    assert not validator.is_valid({PATCH_KEY: [{"op": "add", "path": "/answer", "value": "x" * (SAFE_MAX_LENGTH + 1)}]})
