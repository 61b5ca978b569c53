"""The typed builder declares the same guards as YAML: ``Board.guard`` (a decorator on a
module-level function) and ``Board.judge`` produce the blueprint a dict with those guards does."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from slateboard.blueprint import compile_blueprint
from slateboard.blueprint.compile import BlueprintError
from slateboard.builder import Board


class Notes(BaseModel):
    notes: list[str] = []


def short(before: Any, after: Any, patch: Any) -> bool:
    """Each note is short."""
    return all(len(n) < 80 for n in after["notes"])


def writer(view: Any) -> Any:
    """Adds a note."""
    return [{"op": "add", "path": "/notes/-", "value": "hi"}]


def _board() -> Board[Notes]:
    board = Board("notes", Notes)
    board.function(reads=["/notes"], writes=["/notes/-"])(writer)
    return board


def test_builder_guards_are_the_yaml_guards() -> None:
    board = _board()
    board.guard(shares_reason=True)(short)
    board.judge("polite", model="local", instruction="Polite?", context=["/notes"], workers=["writer"])
    built = board.build()
    as_dict = built.spec.to_json()
    assert as_dict["guards"] == [
        {
            "name": "short",
            "function": f"{__name__}:short",
            "instruction": "",
            "verdict": {"ok": "bool", "reason": "str"},
            "context": [],
            "workers": [],
            "timeout": 30.0,
            "max_tokens": 256,
            "shares_reason": True,
        },
        {
            "name": "polite",
            "model": "local",
            "instruction": "Polite?",
            "verdict": {"ok": "bool", "reason": "str"},
            "context": ["/notes"],
            "workers": ["writer"],
            "timeout": 30.0,
            "max_tokens": 256,
            "shares_reason": False,
        },
    ]
    assert compile_blueprint(as_dict).digest == built.digest
    assert [t.name for t in built.guard_terms] == ["short", "polite"]


def test_a_builder_without_guards_writes_none_and_a_local_guard_is_refused() -> None:
    assert "guards" not in _board().build().spec.to_json()
    board = _board()

    def local(before: Any, after: Any, patch: Any) -> bool:
        return True

    with pytest.raises(BlueprintError, match="module level"):
        board.guard()(local)
    board.judge("j", model="local", instruction=" ")
    with pytest.raises(BlueprintError, match="needs an instruction"):
        board.build()
