"""Joins and batches in blueprints (issue 43): YAML and the builder give the same blueprint, and
every bad input is a BlueprintError at build time naming the rule: a batch of size 0 or over the
bound, a negative or endless timeout, a join of one part, a key that does not compile or names
a variable a rule does not see, a window or a key memory out of range; nothing unbounded."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from compose_kit import JOIN_RULE, shop
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from slateboard.blueprint import BlueprintError, compile_blueprint, load_blueprint
from slateboard.blueprint.gather import MAX_BATCH, MAX_KEYS, MAX_SECONDS, CompiledBatch, CompiledJoin
from slateboard.builder import Board, part


def _with_rule(rule: dict[str, Any]) -> dict[str, Any]:
    data = shop(1, alerts=1, batch={"size": 2})
    data["rules"] = [r for r in data["rules"] if r.get("name") not in ("ship", "digest")] + [rule]
    return data


def _issues(rule: dict[str, Any]) -> str:
    with pytest.raises(BlueprintError) as caught:
        compile_blueprint(_with_rule(rule))
    return str(caught.value)


def _batch(**spec: Any) -> dict[str, Any]:
    return {"name": "digest", "invoke": "digester", "on": {"op": "add", "path": "/alerts/-"}, "batch": spec}


def _join(**changes: Any) -> dict[str, Any]:
    rule = copy.deepcopy(JOIN_RULE)
    rule["join"].update(changes)
    return rule


@pytest.mark.parametrize(
    ("rule", "where", "words"),
    [
        (_batch(size=0), "/batch/size", "batch size must be from 1 to 1000, got 0"),
        (_batch(size=MAX_BATCH + 1), "/batch/size", "got 1001"),
        (_batch(size=-3), "/batch/size", "got -3"),
        (_batch(size=5, seconds=-1), "/batch/seconds", "batch seconds must be more than 0"),
        (_batch(size=5, seconds=0), "/batch/seconds", "got 0"),
        (_batch(size=5, seconds=MAX_SECONDS * 2), "/batch/seconds", "at most 604800"),
        ({**_batch(size=2), "on": {"op": "start"}}, "/on/op", "'start' is not one"),
        (_join(parts={"order": JOIN_RULE["join"]["parts"]["order"]}), "/join/parts", "2 to 16 parts, got 1"),
        (_join(within_versions=0), "/join/within_versions", "within_versions must be from 1"),
        (_join(within_seconds=-5.0), "/join/within_seconds", "within_seconds must be more than 0"),
        (_join(max_keys=0), "/join/max_keys", "max_keys must be from 1"),
        (_join(max_keys=MAX_KEYS + 1), "/join/max_keys", f"got {MAX_KEYS + 1}"),
        ({**_join(), "on": {"op": "add", "path": "/orders/-"}}, "", "put 'on' and 'when' in each part"),
        ({**_join(), "batch": {"size": 2}}, "", "has both a join and a batch"),
    ],
)
def test_bounds_are_blueprint_errors_naming_the_rule(rule: dict[str, Any], where: str, words: str) -> None:
    text = _issues(rule)
    assert f"rule {rule['name']!r}" in text and words in text, text
    index = len(_with_rule(rule)["rules"]) - 1
    assert f"/rules/{index}{where}: " in text, text


def test_a_key_that_does_not_compile_or_names_no_variable_is_a_blueprint_error() -> None:
    broken = _join()
    broken["join"]["parts"]["order"]["key"] = "value.id +"
    assert "parts/order/key: CEL does not compile" in _issues(broken)
    unbound = _join()
    unbound["join"]["parts"]["payment"]["key"] = "self.order"
    assert "parts/payment/key: CEL uses 'self'" in _issues(unbound)
    nowhere = _join()
    nowhere["join"]["parts"]["payment"]["on"]["path"] = "/refunds/-"
    assert "part 'payment' path '/refunds/-' matches no location of the state schema" in _issues(nowhere)


@given(st.integers(min_value=-(10**6), max_value=10**6))
def test_any_batch_size_compiles_exactly_within_its_bound(size: int) -> None:
    data = _with_rule(_batch(size=size))
    if 1 <= size <= MAX_BATCH:
        gather = compile_blueprint(data).rules[-1].gather
        assert isinstance(gather, CompiledBatch) and gather.size == size
    else:
        with pytest.raises(BlueprintError, match=rf"rule 'digest': batch size must be from 1 to {MAX_BATCH}"):
            compile_blueprint(data)


def test_a_blueprint_without_joins_keeps_its_digest_shape() -> None:
    plain = compile_blueprint(shop(1))
    rules = plain.spec.to_json()["rules"]
    assert all("join" not in r and "batch" not in r for r in rules if r.get("name") != "ship")
    assert isinstance(plain.rules[0].gather, CompiledJoin) and plain.rules[0].gather.max_keys == 1000


class Shop(BaseModel):
    orders: list[dict[str, str]] = []
    payments: list[dict[str, str]] = []
    shipped: list[str] = []
    alerts: list[str] = []


def _shop_board() -> Board[Shop]:
    board = Board("shop", Shop)
    board.llm_worker("shipper", instruction="Ship the joined order.", reads=["/orders"], writes=["/shipped/-"])
    board.llm_worker("digester", instruction="Summarise alerts.", reads=["/alerts"], writes=["/shipped/-"])
    return board


def test_the_builder_gives_the_yaml_blueprint() -> None:
    board = _shop_board()
    board.join(
        "shipper",
        {"order": part("add", "/orders/-", key="value.id"), "payment": part("add", "/payments/-", key="value.order")},
        name="ship",
        within_versions=20,
    )
    board.batch("digester", on="add", path="/alerts/-", size=10, seconds=30, name="digest")
    built = board.build()
    again = compile_blueprint(built.spec.to_json(), schema=Shop)
    assert again.digest == built.digest
    assert [type(r.gather) for r in built.rules] == [CompiledJoin, CompiledBatch]
    assert built.spec.to_json()["rules"][1]["batch"] == {"size": 10, "seconds": 30.0}


def test_the_builder_refuses_bad_bounds_while_the_board_is_declared() -> None:
    board = _shop_board()
    with pytest.raises(BlueprintError, match=r"rule 'digest': batch size must be from 1 to 1000, got 0"):
        board.batch("digester", on="add", path="/alerts/-", size=0, name="digest")
    with pytest.raises(BlueprintError, match=r"rule 'digest': batch seconds must be more than 0.*got -1"):
        board.batch("digester", on="add", path="/alerts/-", size=3, seconds=-1, name="digest")
    with pytest.raises(BlueprintError, match=r"rule 'ship': a join correlates 2 to 16 parts, got 1"):
        board.join("shipper", {"order": part("add", "/orders/-", key="value.id")}, name="ship")
    assert board.blueprint().rules == []


def test_a_yaml_file_with_bare_on_keys_loads(tmp_path: Path) -> None:
    # YAML 1.1 reads a bare `on:` as true: load_blueprint gives it back to rules and join parts.
    text = (
        "schema: {type: object, properties: {a: {type: array}, b: {type: array}}}\n"
        "initial_state: {a: [], b: []}\n"
        "workers: {w: {reads: [], writes: [/a/-]}}\n"
        "rules:\n"
        "  - name: pair\n"
        "    invoke: w\n"
        "    join:\n"
        "      parts:\n"
        "        left: {on: {op: add, path: /a/-}, key: value}\n"
        "        right: {on: {op: add, path: /b/-}, key: value}\n"
    )
    (tmp_path / "pair.yaml").write_text(text, encoding="utf-8")
    (rule,) = load_blueprint(tmp_path / "pair.yaml").rules
    assert isinstance(rule.gather, CompiledJoin) and [p.name for p in rule.gather.parts] == ["left", "right"]
