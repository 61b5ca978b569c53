"""Fuzz targets (issue 20), bounded so they run in CI in seconds with the same examples
every time (derandomized): hostile model replies through ``parse_reply`` and the kernel, and
hostile blueprint YAML through loading and compiling. Nothing may escape as an exception and
no rejection may be logged at stage ``internal`` (the kernel's "this is a bug" stage)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slateboard.blueprint import BlueprintError, compile_blueprint, load_blueprint
from slateboard.kernel import CelCompileError, Kernel, Proposal, compile_cel
from slateboard.workers.parse import parse_reply

FUZZ = settings(
    max_examples=150,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)

BLUEPRINT: dict[str, Any] = {
    "name": "fuzz",
    "schema": {
        "type": "object",
        "properties": {
            "notes": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 5},
            "m": {
                "type": "object",
                "patternProperties": {"^[a-z]+$": {"type": "integer"}},
                "additionalProperties": False,
            },
            "n": {"type": "integer", "minimum": 0},
        },
        "additionalProperties": False,
    },
    "initial_state": {"notes": [], "m": {}, "n": 0},
    "workers": {
        "w": {"reads": ["/**"], "writes": ["/**"], "ops": ["add", "replace", "remove", "test", "move", "copy"]}
    },
    "invariants": [{"at": "/n", "rule": "self < 100"}],
}
KERNEL_BP = compile_blueprint(BLUEPRINT)

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=False),
    st.text(max_size=12), st.sampled_from(["/notes/-", "/m/abc\n", "/m/١٢", "/n", "/notes/" + "9" * 30, "add", "op"]),
)  # fmt: skip
json_value = st.recursive(
    json_leaf,
    lambda kids: st.one_of(
        st.lists(kids, max_size=4),
        st.dictionaries(
            st.sampled_from(["op", "path", "value", "from", "patch", "tool", "args", "expand"]), kids, max_size=4
        ),
    ),
    max_leaves=12,
)
op = st.fixed_dictionaries(
    {"op": st.sampled_from(["add", "replace", "remove", "test", "move", "copy", "bogus"]),
     "path": st.sampled_from(["/notes/-", "/notes/0", "/m/abc", "/m/abc\n", "/m/١٢", "/n", "", "/x", "/notes/" + "9" * 5000])},
    optional={"value": json_value, "from": st.sampled_from(["/notes/0", "/n", "/m"])},
)  # fmt: skip


@st.composite
def replies(draw: st.DrawFn) -> str:
    """Reply text: JSON patches in the shapes models use, broken, wrapped, nested or repeated."""
    body = json.dumps(draw(st.one_of(st.lists(op, max_size=4), json_value)))
    if draw(st.booleans()):
        body = body.replace('"path"', '"path": "/n", "path"', 1)  # a repeated key
    shape = draw(st.sampled_from(["bare", "fenced", "prose", "wrapped", "deep", "cut", "text"]))
    if shape == "fenced":
        return f"Here:\n```json\n{body}\n```"
    if shape == "prose":
        return f"I propose {body} as the patch."
    if shape == "wrapped":
        return json.dumps({"patch": body if draw(st.booleans()) else json.loads(body)})
    if shape == "deep":
        n = draw(st.integers(min_value=50, max_value=6000))
        return "[" * n + body + "]" * n
    if shape == "cut":
        return body[: draw(st.integers(min_value=0, max_value=len(body)))]
    if shape == "text":
        return draw(st.text(max_size=200))
    return body


@FUZZ
@given(replies())
def test_fuzz_model_replies_through_parse_reply_and_the_kernel(text: str) -> None:
    parsed = parse_reply(text)
    patch = parsed.patch if parsed.ok or isinstance(parsed.patch, str) else text
    kernel = Kernel(KERNEL_BP)
    decision = kernel.submit(Proposal("w", patch))
    assert decision.stage != "internal", decision.reason
    if decision.accepted:
        assert KERNEL_BP.schema.validate_state(kernel.state) == []


cel_text = st.one_of(
    st.sampled_from(["self < 100", "size(self) > 0", "self.all(x, x.all(y, y))", "has(self.n)", ")", "1 +", "'\\"]),
    st.text(max_size=40),
)
schema_value = st.recursive(
    st.one_of(st.booleans(), st.sampled_from([{"type": "string"}, {"type": "integer"}, {"$ref": "#/$defs/x"},
                                              {"$ref": "http://127.0.0.1:9/s"}, {"pattern": "^(a+)+$"}, {"pattern": "(?=a)"}])),
    lambda kids: st.dictionaries(st.sampled_from(["type", "properties", "items", "patternProperties", "additionalProperties",
                                                 "$defs", "required", "enum", "^[a-z]+$", "a", "x"]), kids, max_size=3),
    max_leaves=8,
)  # fmt: skip


@st.composite
def blueprint_yaml(draw: st.DrawFn) -> str:
    """Blueprint YAML: valid ones mutated (schemas, CEL, paths), anchors and aliases, junk."""
    shape = draw(st.sampled_from(["mutated", "aliases", "junk", "duplicate"]))
    if shape == "junk":
        return draw(st.text(max_size=300))
    data = json.loads(json.dumps(BLUEPRINT))
    if draw(st.booleans()):
        data["schema"]["properties"]["extra"] = draw(schema_value)
    if draw(st.booleans()):
        data["invariants"] = [
            {"at": draw(st.sampled_from(["/n", "/notes/*", "/", "", "/x", "**"])), "rule": draw(cel_text)}
        ]
    if draw(st.booleans()):
        data["workers"]["w"]["writes"] = [draw(st.sampled_from(["/notes/-", "/m/*", "/n", "/nowhere", "notes", "/**"]))]
    if draw(st.booleans()):
        data["initial_state"] = draw(json_value)
    text = yaml.safe_dump(data, sort_keys=False)
    if shape == "aliases":
        k = draw(st.integers(min_value=1, max_value=9))
        chain = "x0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n" + "".join(
            f"x{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, k + 1)
        )
        text = chain + text + f"description: *a{k}\n"
    if shape == "duplicate":
        text += "invariants: []\n"
    return text


@FUZZ
@given(blueprint_yaml())
def test_fuzz_blueprint_yaml_through_loading_and_compiling(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bp.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            bp = load_blueprint(path)
        except BlueprintError:
            return  # refused with issues: the only acceptable failure
    kernel = Kernel(bp)
    for patch in ([{"op": "add", "path": "/notes/-", "value": "x"}], [{"op": "replace", "path": "/n", "value": 5}]):
        decision = kernel.submit(Proposal("w", patch))
        assert decision.stage != "internal", decision.reason


cel_piece = st.sampled_from(
    ["self", "root", "self.notes", "root.items", "x", "y", "x.tags", "[1, 2, 3]", "{'a': [1]}", "self.m",
     "self.notes + self.notes", "size(self.notes)", "'in'", "1", "true", "null", "self.m['a']", "x.?y"]
)  # fmt: skip


@st.composite
def cel_expressions(draw: st.DrawFn) -> str:
    """CEL built from loops over paths, literals and variables, nested and combined, sometimes cut."""
    expr = draw(cel_piece)
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        macro = draw(st.sampled_from(["all", "exists", "exists_one", "map", "filter", "in", "&&", "?"]))
        other = draw(cel_piece)
        if macro == "in":
            expr = f"{other} in {expr}"
        elif macro == "&&":
            expr = f"({expr}) && {other}"
        elif macro == "?":
            expr = f"{other} ? {expr} : {draw(cel_piece)}"
        else:
            var = draw(st.sampled_from(["x", "y"]))
            expr = f"{other}.{macro}({var}, {expr})"
    if draw(st.integers(min_value=0, max_value=9)) == 0:
        expr = expr[: draw(st.integers(min_value=0, max_value=len(expr)))]
    return expr


@FUZZ
@given(cel_expressions(), json_value, st.integers(min_value=1, max_value=10_000))
def test_fuzz_cel_budget_estimate_never_raises(source: str, value: Any, budget: int) -> None:
    """D19: the budget's estimator parses any compiled expression (or falls back) and never
    raises; an expression within its budget is evaluated, one over it is not."""
    try:
        expr = compile_cel(source, budget=budget, max_nesting=4)
    except CelCompileError:
        return
    context = {"self": {"notes": [1, 2, value], "m": {"a": [value]}}, "root": {"items": [{"tags": value}]}}
    steps = expr.estimate(context)
    assert isinstance(steps, int) and steps >= 1
    result = expr.evaluate(context)
    assert result.over_budget == (expr.cost.loops and steps > budget)
