"""Tool argument schemas and validation from type hints, through pydantic."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

import pydantic
from pydantic import Field

from slateboard.workers.tools import tool


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(pydantic.BaseModel):
    x: int
    y: Annotated[int, Field(ge=0)]


seen: list[tuple[Any, ...]] = []


@tool
def plot(
    kind: Literal["bar", "line"],
    values: list[int],
    at: Point,
    colour: Colour = Colour.RED,
    width: Annotated[int, Field(ge=1, le=10)] = 2,
) -> str:
    """Plot values."""
    seen.append((kind, values, at, colour, width))
    return f"{kind}:{sum(values)}@{at.x},{at.y}:{colour.value}:{width}"


def test_schema_keeps_literals_lists_nested_models_enums_and_bounds() -> None:
    schema = dict(plot.parameters or {})
    props = schema["properties"]
    assert schema["required"] == ["kind", "values", "at"]
    assert props["kind"]["enum"] == ["bar", "line"]
    assert props["values"] == {"type": "array", "items": {"type": "integer"}, "title": "Values"}
    assert props["at"]["properties"]["y"]["minimum"] == 0
    assert props["at"]["required"] == ["x", "y"]
    assert props["colour"]["enum"] == ["red", "blue"]
    assert (props["width"]["minimum"], props["width"]["maximum"]) == (1, 10)
    assert schema["additionalProperties"] is False
    assert "$ref" not in str(schema) and "$defs" not in schema


async def test_arguments_are_validated_and_converted() -> None:
    ok = await plot.call({"kind": "bar", "values": ["1", 2], "at": {"x": 1, "y": 2}, "colour": "blue"})
    assert ok.ok and ok.value == "bar:3@1,2:blue:2"
    _, values, at, colour, _ = seen[-1]
    assert values == [1, 2] and isinstance(at, Point) and colour is Colour.BLUE


async def test_bad_arguments_are_refused_with_where_and_why() -> None:
    calls = len(seen)
    for args, fragment in (
        ({"kind": "pie", "values": [1], "at": {"x": 0, "y": 0}}, "kind"),
        ({"kind": "bar", "values": ["x"], "at": {"x": 0, "y": 0}}, "values.0"),
        ({"kind": "bar", "values": [1], "at": {"x": 0, "y": -1}}, "at.y"),
        ({"kind": "bar", "values": [1], "at": {"x": 0, "y": 0}, "width": 11}, "width"),
        ({"kind": "bar", "values": [1], "at": {"x": 0, "y": 0}, "extra": 1}, "extra"),
        ({"kind": "bar", "values": [1]}, "at"),
    ):
        result = await plot.call(args)
        assert not result.ok and result.error is not None
        assert result.error.startswith("bad arguments: ") and fragment in result.error
    assert len(seen) == calls  # the function never ran on bad arguments


async def test_an_explicit_schema_is_used_as_given() -> None:
    echo = tool(lambda x: x, name="echo", parameters={"type": "object", "properties": {"x": {}}})
    assert echo.parameters == {"type": "object", "properties": {"x": {}}}
    assert (await echo.call({"x": [1]})).value == [1]
