"""compile_blueprint(schema=PydanticModel): the model's JSON schema is the state schema, the
kernel enforces it, and the final state comes back typed."""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

import pydantic
import pytest
from pydantic import Field

from slateboard.blueprint import compile_blueprint
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store


class Finding(pydantic.BaseModel):
    metric: str
    change: Annotated[float, Field(ge=-100, le=100)]


class State(pydantic.BaseModel):
    task: str
    findings: list[Finding] = []
    verdict: Literal["up", "down"] | None = None


BLUEPRINT = {
    "name": "typed",
    "schema": {"type": "object"},  # replaced by State's schema
    "initial_state": {"task": "why", "findings": []},
    "workers": {"analyst": {"reads": ["/task", "/findings"], "writes": ["/findings/-", "/verdict"]}},
    "rules": [{"on": {"op": "start"}, "invoke": "analyst"}],
    "done": "has(state.verdict)",
    "answer": "/verdict",
}


def analyst(view: object) -> list[dict[str, object]]:
    return [
        {"op": "add", "path": "/findings/-", "value": {"metric": "retention", "change": -12.5}},
        {"op": "add", "path": "/verdict", "value": "down"},
    ]


def test_a_pydantic_state_model_is_enforced_and_typed() -> None:
    compiled = compile_blueprint(BLUEPRINT, schema=State)
    assert compiled.state_model is State
    # the model's schema, its objects closed (pydantic's default extra="ignore" would drop an unknown member)
    closed = State.model_json_schema()
    closed["additionalProperties"] = False
    closed["$defs"]["Finding"]["additionalProperties"] = False
    assert compiled.spec.state_schema == closed

    async def go() -> tuple[object, list[str | None]]:
        store = await open_store("memory://")
        try:
            board = await create_board(store, compiled)
            bad = await create_board(store, compiled)
            result = await Runner(store, board, functions={"analyst": analyst}).run()
            wrong = [{"op": "add", "path": "/findings/-", "value": {"metric": "x", "change": 400}}]
            await Runner(store, bad, functions={"analyst": lambda v: wrong}, max_steps=1).run()
            stages = [r.stage for r in await store.read_records(bad) if r.kind == "proposal"]
            return result, stages
        finally:
            await store.close()

    result, stages = asyncio.run(go())
    typed = compiled.typed_state(result.state)  # type: ignore[attr-defined]
    assert isinstance(typed, State)
    assert typed.verdict == "down" and typed.findings[0].change == -12.5
    assert stages and stages[0] == "schema"  # change 400 breaks Field(le=100)


def test_schema_must_be_a_pydantic_class() -> None:
    with pytest.raises(TypeError, match="pydantic model class"):
        compile_blueprint(BLUEPRINT, schema={"type": "object"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not compiled with schema"):
        compile_blueprint(BLUEPRINT).typed_state({})
