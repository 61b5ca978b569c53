"""One vocabulary for what the log says: ``RecordKind`` names every kind of record slateboard
writes, each kind has one constant in ``kernel.record``, and the writers use the constants.

The writer check reads the source with ``ast``: every ``<...>kernel.action(KIND, ...)`` call
in the package names its kind by a constant whose value is a ``RecordKind`` (replay, which
rebuilds a logged record whatever its kind, is the one call that passes a record's own kind).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import slateboard.kernel.record as record_module
from slateboard import status
from slateboard.kernel import RecordKind
from slateboard.kernel.record import RECORD_KINDS

SRC = Path(__file__).resolve().parents[2] / "src" / "slateboard"
KIND_CONSTANTS = {name: value for name, value in vars(record_module).items() if name.endswith("_KIND")}


def test_every_record_kind_has_one_constant() -> None:
    assert sorted(KIND_CONSTANTS.values()) == sorted(RECORD_KINDS) == sorted(get_args(RecordKind))
    assert len(set(KIND_CONSTANTS.values())) == len(KIND_CONSTANTS), "two constants spell one kind"


def _action_kinds(source: str, where: str) -> list[tuple[str, int, ast.expr]]:
    """The first argument of each ``...kernel.action(...)`` call in ``source``."""
    out = []
    for node in ast.walk(ast.parse(source, where)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "action"
            and ast.unparse(node.func.value).endswith("kernel")
            and node.args
        ):
            out.append((where, node.lineno, node.args[0]))
    return out


def test_writers_name_record_kinds_by_constant() -> None:
    calls = [
        call
        for path in sorted(SRC.rglob("*.py"))
        for call in _action_kinds(path.read_text(encoding="utf-8"), str(path.relative_to(SRC)))
    ]
    assert len(calls) >= 10, "the walk found too few kernel.action calls to be looking everywhere"
    bad = []
    for where, line, arg in calls:
        name = arg.id if isinstance(arg, ast.Name) else arg.attr if isinstance(arg, ast.Attribute) else None
        if where == "kernel/replay.py" and ast.unparse(arg) == "cast(RecordKind, rec.kind)":
            continue  # rebuilds a logged record as it is
        if name is None:
            bad.append(f"{where}:{line} kind {ast.unparse(arg)} is not a named constant")
        elif name not in KIND_CONSTANTS and not name.endswith("_KIND"):
            bad.append(f"{where}:{line} kind {name} is not a record-kind constant")
    assert bad == []


def test_the_writer_check_can_fail() -> None:
    sample = 'self.kernel.action("stage", why)\nkernel.action(STAGE_KIND, why)\nother.action("x")\n'
    kinds = [ast.unparse(arg) for _, _, arg in _action_kinds(sample, "sample")]
    assert kinds == ["'stage'", "STAGE_KIND"]


def test_end_reasons_are_what_the_status_mapping_reads() -> None:
    # The runtime writes these constants; end_status must classify each as the docs say.
    assert status.end_status("done", status.DONE_CONDITION) == "solved"
    assert status.end_status("done", status.TERMINATED) == "solved"
    for limit in (status.MAX_STEPS, status.MAX_TOKENS, status.MAX_COST):
        assert status.end_status("done", limit) == "exhausted"
    assert status.end_status("done", f"{status.BUDGET_PREFIX}max_cost") == "exhausted"
    assert status.end_status("done", f"{status.CIRCUIT_PREFIX}: worker a stuck") == "failed"
    assert status.end_status("paused", f"{status.PAUSED_PREFIX}: awaiting approval of record 3") == "paused"
    assert status.end_status("done", f"{status.FAIL_PREFIX}state.x > 1") == "failed"
    assert status.end_status("done", status.AGENDA_EMPTY, answered=True) == "solved"
    assert status.end_status("done", status.AGENDA_EMPTY, answered=False) == "exhausted"
    assert status.end_status("done", status.MAX_ROUNDS, answered=False) == "exhausted"
