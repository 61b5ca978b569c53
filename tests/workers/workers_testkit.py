"""Helpers for the worker tests: small blueprints, a random-state generator for them, and a
hypothesis strategy that draws instances of a JSON Schema (the subset the derived proposal
schemas use), written independently of slateboard.workers so it can serve as an oracle."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from slateboard.blueprint import CompiledBlueprint, compile_blueprint

settings.register_profile(
    "workers-ci",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)

NOTES_BLUEPRINT: dict[str, Any] = {
    "name": "notes",
    "schema": {
        "type": "object",
        "required": ["topic", "notes"],
        "additionalProperties": False,
        "properties": {
            "topic": {"type": "string"},
            "notes": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["text", "author"],
                    "additionalProperties": False,
                    "properties": {
                        "text": {"type": "string", "minLength": 1, "maxLength": 200},
                        "author": {"const": "scribe"},
                    },
                },
            },
        },
    },
    "initial_state": {"topic": "why the sky is blue", "notes": []},
    "workers": {
        "scribe": {
            "instruction": "Add one short note about the topic.",
            "reads": ["/topic", "/notes"],
            "writes": ["/notes/-"],
            "ops": ["add"],
        }
    },
}


def notes_blueprint() -> CompiledBlueprint:
    """One worker appending ``{"text": string, "author": "scribe"}`` notes."""
    return compile_blueprint(NOTES_BLUEPRINT)


CLAIM = {
    "type": "object",
    "required": ["text", "status"],
    "additionalProperties": False,
    "properties": {
        "text": {"type": "string", "maxLength": 40},
        "status": {"enum": ["open", "supported", "refuted"]},
        "score": {"type": "integer", "minimum": 0, "maximum": 10},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3},
    },
}

RICH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["query", "claims", "scores", "meta"],
    "additionalProperties": False,
    "$defs": {"claim": CLAIM},
    "properties": {
        "query": {"type": "string"},
        "claims": {"type": "array", "items": {"$ref": "#/$defs/claim"}, "maxItems": 6},
        "scores": {"type": "object", "additionalProperties": {"type": "integer", "minimum": -5, "maximum": 5}},
        "meta": {
            "type": "object",
            "required": ["round"],
            "additionalProperties": False,
            "maxProperties": 3,
            "properties": {
                "round": {"type": "integer", "minimum": 0},
                "note": {"type": ["string", "null"], "maxLength": 20},
                "done": {"type": "boolean"},
            },
        },
        "answer": {"type": "string", "maxLength": 30},
        "log": {"type": "array", "items": {"type": "string", "maxLength": 12}, "minItems": 1},
    },
}

RICH_WORKERS: dict[str, Any] = {
    # every op but move/copy, over several pattern shapes
    "editor": {
        "reads": ["/query", "/claims"],
        "writes": [
            "/claims/*/status",
            "/claims/*/score",
            "/claims/*/tags",
            "/claims/-",
            "/scores/*",
            "/meta/*",
            "/answer",
            "/log/*",
        ],
        "ops": ["add", "replace", "remove", "test"],
    },
    # the default ops (add, replace, test) on narrower paths
    "judge": {"reads": ["/claims"], "writes": ["/claims/*/status", "/answer"]},
    # a deep pattern
    "keeper": {"reads": ["/meta"], "writes": ["/meta/**"], "ops": ["add", "replace", "remove"]},
}


def rich_blueprint() -> CompiledBlueprint:
    """Arrays of $ref'd objects, a plain map, a bounded object, optional members, bounds."""
    return compile_blueprint(
        {
            "name": "rich",
            "schema": RICH_SCHEMA,
            "initial_state": {"query": "q", "claims": [], "scores": {}, "meta": {"round": 0}},
            "workers": RICH_WORKERS,
        }
    )


_TEXT = st.text(alphabet="abcxyz ~/", min_size=0, max_size=6)


@st.composite
def rich_states(draw: st.DrawFn) -> dict[str, Any]:
    """Random valid states of RICH_SCHEMA (keys with '/' and '~' included)."""
    claims = []
    for _ in range(draw(st.integers(0, 6))):
        claim: dict[str, Any] = {"text": draw(_TEXT), "status": draw(st.sampled_from(["open", "supported", "refuted"]))}
        if draw(st.booleans()):
            claim["score"] = draw(st.integers(0, 10))
        if draw(st.booleans()):
            claim["tags"] = draw(st.lists(st.text(alphabet="ab", max_size=3), max_size=3))
        claims.append(claim)
    scores = draw(st.dictionaries(st.text(alphabet="ab/~1", min_size=1, max_size=3), st.integers(-5, 5), max_size=4))
    meta: dict[str, Any] = {"round": draw(st.integers(0, 9))}
    if draw(st.booleans()):
        meta["note"] = draw(st.one_of(st.none(), st.text(alphabet="ab", max_size=4)))
    if draw(st.booleans()):
        meta["done"] = draw(st.booleans())
    state: dict[str, Any] = {"query": draw(_TEXT), "claims": claims, "scores": scores, "meta": meta}
    if draw(st.booleans()):
        state["answer"] = draw(_TEXT)
    if draw(st.booleans()):
        state["log"] = draw(st.lists(st.text(alphabet="ab", max_size=4), min_size=1, max_size=3))
    return state


# -- instances of a JSON Schema --------------------------------------------------------------------
def _resolve(schema: Any, root: dict[str, Any]) -> Any:
    while isinstance(schema, dict) and "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/"), ref
        node: Any = root
        for tok in ref[2:].split("/"):
            node = node[tok.replace("~1", "/").replace("~0", "~")]
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**node, **rest} if rest and isinstance(node, dict) else node
    return schema


def instances(schema: Any, root: dict[str, Any], *, key_hint: list[str] | None = None) -> st.SearchStrategy[Any]:
    """Values drawn for ``schema`` (the subset used by derived proposal schemas); callers still
    validate the result, since e.g. a drawn string may not match a ``pattern``."""
    schema = _resolve(schema, root)
    if schema is True or schema == {}:
        return st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=3))
    assert isinstance(schema, dict), schema
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([instances(s, root, key_hint=key_hint) for s in schema[key]])
    types = schema.get("type")
    if isinstance(types, list):
        return st.one_of([instances({**schema, "type": t}, root, key_hint=key_hint) for t in types])
    if types == "object" or "properties" in schema:
        props = schema.get("properties", {})
        required = set(schema.get("required", []))

        @st.composite
        def obj(draw: st.DrawFn) -> dict[str, Any]:
            out = {}
            for name, sub in props.items():
                if name in required or draw(st.booleans()):
                    out[name] = draw(instances(sub, root))
            return out

        return obj()
    if types == "array":
        lo = schema.get("minItems", 0)
        hi = min(schema.get("maxItems", lo + 3), lo + 3)
        return st.lists(instances(schema.get("items", {}), root), min_size=lo, max_size=hi)
    if types == "string":
        if "pattern" in schema and schema["pattern"].startswith("^/"):
            return _pattern_strings(schema["pattern"], key_hint or [])
        lo = schema.get("minLength", 0)
        hi = min(schema.get("maxLength", lo + 6), lo + 6)
        return st.text(alphabet="abz ", min_size=lo, max_size=hi)
    if types == "integer":
        return st.integers(schema.get("minimum", -20), schema.get("maximum", 20))
    if types == "number":
        return st.integers(-5, 5)
    if types == "boolean":
        return st.booleans()
    if types == "null":
        return st.none()
    raise AssertionError(f"schema not covered by the test generator: {schema}")


def _pattern_strings(pattern: str, hints: list[str]) -> st.SearchStrategy[str]:
    """Paths for a path regex: fill each regex group with an index, '-', or a (hinted) key."""
    rx = re.compile(pattern)

    @st.composite
    def draw_path(draw: st.DrawFn) -> str:
        use_hint: bool = bool(hints) and draw(st.booleans())
        if use_hint:
            choice: str = draw(st.sampled_from(hints))
            if rx.fullmatch(choice):
                return choice
        body = pattern.strip("^$")
        parts = re.split(r"(\(0\|\[1-9\]\[0-9\]\*\)|\(\(0\|\[1-9\]\[0-9\]\*\)\|-\)|\(\[\^/~\]\|~\[01\]\)\+)", body)
        out = []
        for part in parts:
            if part in ("(0|[1-9][0-9]*)",):
                out.append(str(draw(st.integers(0, 7))))
            elif part == "((0|[1-9][0-9]*)|-)":
                out.append(draw(st.sampled_from(["-", "0", "1", "5"])))
            elif part == "([^/~]|~[01])+":
                out.append(draw(st.sampled_from(["a", "b", "new", "a~1b", "x~0"])))
            else:
                out.append(re.sub(r"\\(.)", r"\1", part))
        return "".join(out)

    return draw_path()
