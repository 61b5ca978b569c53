"""The Architect with scripted models: accepted at once, repaired from the validator's issues,
failing with every issue after the last repair; usage reported as "architect"."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from slateboard.architect import (
    EXAMPLE_BLUEPRINT,
    Architect,
    ArchitectError,
    blueprint_from_request,
    meta_schema_text,
    runnable_issues,
)
from slateboard.blueprint import CompiledBlueprint, compile_blueprint
from slateboard.models import ModelServerError, ScriptedModel
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store

REQUEST = "Answer a question by collecting facts and writing an answer from them."


def good() -> dict[str, Any]:
    return {
        "name": "facts",
        "schema": {
            "type": "object",
            "required": ["question", "facts"],
            "additionalProperties": False,
            "properties": {
                "question": {"type": "string"},
                "facts": {"type": "array", "items": {"type": "string", "minLength": 1}},
                "answer": {"type": "string"},
            },
        },
        "initial_state": {"question": "", "facts": []},
        "workers": {
            "researcher": {"instruction": "Add a fact.", "reads": ["/question"], "writes": ["/facts/-"]},
            "writer": {"instruction": "Answer.", "reads": ["/**"], "writes": ["/answer"]},
        },
        "rules": [
            {"on": {"op": "start"}, "invoke": "researcher"},
            {"on": {"op": "add", "path": "/facts/-"}, "invoke": "writer"},
        ],
        "done": "has(state.answer)",
        "answer": "/answer",
    }


def broken() -> dict[str, Any]:
    """Three independent problems, each found by the validator."""
    bp = good()
    bp["rules"][1]["invoke"] = "ghost"  # unknown worker
    bp["workers"]["researcher"]["writes"] = ["/fcts/-"]  # matches no schema location
    bp["invariants"] = [{"at": "/facts", "rule": "size(self) >"}]  # CEL does not compile
    return bp


def test_the_example_and_the_meta_schema() -> None:
    compiled = compile_blueprint(copy.deepcopy(EXAMPLE_BLUEPRINT))
    assert runnable_issues(compiled) == []
    meta = json.loads(meta_schema_text())
    assert {"schema", "workers", "rules", "invariants", "done", "answer"} <= set(meta["properties"])
    assert '"title"' not in meta_schema_text()


async def test_accepted_on_the_first_attempt() -> None:
    model = ScriptedModel(["Here is the blueprint:\n```json\n" + json.dumps(good()) + "\n```"])
    architect = Architect(model)
    design = await architect.design_report(REQUEST)
    assert isinstance(design.blueprint, CompiledBlueprint)
    assert design.blueprint.spec.name == "facts" and design.repairs == 0
    assert len(model.calls) == 1
    system, user = model.calls[0].messages
    assert system.role == "system" and meta_schema_text() in system.content
    assert json.dumps(EXAMPLE_BLUEPRINT, separators=(",", ":")) in system.content
    assert user.content == f"Task:\n{REQUEST}"
    assert design.usage.component == "architect" and design.usage.tokens_in > 0 and design.usage.tokens_out > 0
    assert architect.usage.tokens_in == design.usage.tokens_in and architect.calls == 1


async def test_repaired_from_the_validators_issues() -> None:
    first = json.dumps(broken())
    model = ScriptedModel([first, json.dumps(good())])
    design = await Architect(model).design_report(REQUEST)
    assert design.repairs == 1 and design.blueprint.spec.rules[1].invoke == "writer"
    paths = {i.path for i in design.attempts[0].issues}
    assert {"/rules/1/invoke", "/workers/researcher/writes/0", "/invariants/0/rule"} <= paths
    # The second prompt holds the first attempt and every issue by its path.
    second = model.calls[1].messages
    assert [m.role for m in second] == ["system", "user", "assistant", "user"]
    assert second[2].content == first
    for path in ("/rules/1/invoke", "/workers/researcher/writes/0", "/invariants/0/rule"):
        assert f"- {path}: " in second[3].content
    assert "unknown worker 'ghost'" in second[3].content
    assert design.usage.tokens_in == sum(a.usage.tokens_in for a in design.attempts)


async def test_fails_after_max_repairs_with_every_issue() -> None:
    no_start = good()
    no_start["rules"] = no_start["rules"][1:]
    del no_start["done"]
    model = ScriptedModel(["I cannot do that.", json.dumps(no_start), json.dumps(broken())])
    architect = Architect(model, max_repairs=2)
    with pytest.raises(ArchitectError) as caught:
        await architect.design(REQUEST)
    err = caught.value
    assert len(model.calls) == 3 and len(err.attempts) == 3
    assert err.attempts[0].issues[0].message.startswith("the reply holds no JSON object")
    # Runnability is checked too: no start rule, no done condition.
    assert {i.path for i in err.attempts[1].issues} == {"/rules", "/done"}
    # The error carries every issue of the last attempt, and says so.
    assert {i.path for i in err.issues} == {i.path for i in err.attempts[2].issues}
    assert len(err.issues) >= 3
    for issue in err.issues:
        assert str(issue) in str(err)
    assert err.usage.component == "architect" and err.usage.tokens_in == architect.usage.tokens_in


async def test_zero_repairs_and_argument_checks() -> None:
    model = ScriptedModel([json.dumps(broken()), json.dumps(good())])
    with pytest.raises(ArchitectError):
        await Architect(model, max_repairs=0).design(REQUEST)
    assert len(model.calls) == 1
    with pytest.raises(ValueError):
        Architect(model, max_repairs=-1)
    with pytest.raises(ValueError):
        await Architect(model).design("  ")


async def test_runnability_can_be_waived() -> None:
    bare = good()
    del bare["answer"]
    bare["rules"] = []
    compiled = await Architect(ScriptedModel([json.dumps(bare)]), require_runnable=False).design(REQUEST)
    assert compiled.spec.answer is None
    unwritable = good()
    unwritable["answer"] = "/question"
    issues = runnable_issues(compile_blueprint(unwritable))
    assert [i.path for i in issues] == ["/answer"] and "write contract" in issues[0].message


async def test_model_failure_raises_architect_error() -> None:
    def boom(messages: Any) -> str:
        raise ModelServerError("scripted", "down")

    with pytest.raises(ArchitectError, match="model failed"):
        await Architect(ScriptedModel([boom])).design(REQUEST)


async def test_blueprint_from_request_and_the_design_runs() -> None:
    spec = "scripted:" + json.dumps([json.dumps(good())])
    compiled = await blueprint_from_request(REQUEST, model=spec, max_repairs=1)
    store = await open_store("memory://")
    try:
        board = await create_board(store, compiled, inputs={"question": "What is 2 + 2?"})
        result = await Runner(
            store,
            board,
            functions={
                "researcher": lambda view: [{"op": "add", "path": "/facts/-", "value": "2 + 2 = 4"}],
                "writer": lambda view: [{"op": "add", "path": "/answer", "value": "4"}],
            },
        ).run()
        assert result.end_reason == "done" and result.answer == "4"
    finally:
        await store.close()
