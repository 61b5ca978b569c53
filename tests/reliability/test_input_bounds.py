"""Issue 29, R9, R13, R14: hostile sizes give a clear, cheap refusal.

R9: on ec36c64 a Python patch of 10^6 operations was walked whole and then ``repr``'d whole for
the log (3.6 s, 290 MB) before being refused; the test counts how many of its items the kernel
touched (all of them there, none now: the op count is checked first and the reason names
``limits.max_ops``).
R13: a 5,000-deep ``--input`` gave ``internal error: RecursionError``; now a usage error naming
the depth and ``limits.max_depth``.
R14: an anchor line with a 31-digit ``seq`` (or ``true``, ``-1``, a non-ASCII mac, which made
``hmac.compare_digest`` raise ``TypeError``) gave an internal error or a confusing verdict; now
the anchor file is refused naming the line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reliability_testkit import Invoke

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import Kernel, Proposal

BP = {"schema": {"type": "object"}, "initial_state": {}, "workers": {"w": {"reads": ["/**"], "writes": ["/**"]}}}


class Watched(list[Any]):
    """A list that counts the items anyone iterated over."""

    touched = 0

    def __iter__(self) -> Iterator[Any]:
        for item in super().__iter__():
            Watched.touched += 1
            yield item

    def __repr__(self) -> str:
        Watched.touched += len(self)
        return super().__repr__()


def test_r9_a_million_op_patch_is_refused_before_it_is_walked() -> None:
    kernel = Kernel(compile_blueprint(BP))
    patch = Watched({"op": "add", "path": f"/k{i}", "value": i} for i in range(10**6))
    Watched.touched = 0
    decision = kernel.submit(Proposal("w", patch))
    assert (decision.record.outcome, decision.stage) == ("rejected", "ops")
    assert "1000000 operations, over the limit of 256 (limits.max_ops)" in (decision.reason or "")
    assert Watched.touched <= 64  # the logged text shows a bounded prefix, nothing more
    assert len(decision.record.patch or "") <= 4096
    assert kernel.state == {} and kernel.version == 0


def test_r9_a_huge_value_is_logged_as_a_bounded_prefix() -> None:
    kernel = Kernel(compile_blueprint(BP))
    decision = kernel.submit(Proposal("w", [{"op": "add", "path": "/a", "value": list(range(10**6))}]))
    assert decision.stage == "parse" and "over the limit" in (decision.reason or "")
    assert len(decision.record.patch or "") <= 4096


def test_r13_a_5000_deep_input_is_a_usage_error(invoke: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(
        "name: x\nschema: {type: object, properties: {x: {}}}\ninitial_state: {}\nworkers:\n  w: {reads: [/**]}\n"
    )
    deep = "[" * 5000 + "]" * 5000
    result = invoke("submit", str(path), "--input", f"x={deep}")
    assert result.exit_code == 2, result.output
    assert "--input x: the value nests 5000 levels deep" in result.stderr and "limits.max_depth" in result.stderr
    assert "internal error" not in result.output


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("seq", 1234567890123456789012345678901),
        ("seq", True),
        ("seq", -1),
        ("version", 10**19),
        ("mac", "é" * 64),
        ("hash", "not hex"),
    ],
)
def test_r14_a_malformed_anchor_line_is_refused_by_line(invoke: Invoke, tmp_path: Path, field: str, value: Any) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("name: x\nschema: {type: object}\ninitial_state: {}\nworkers:\n  w: {reads: [/**]}\n")
    board = json.loads(invoke("submit", str(path), "--json").stdout)["board_id"]
    key = tmp_path / "k.key"
    key.write_bytes(b"0123456789abcdef0123456789abcdef")
    line = {"board_id": board, "seq": 1, "hash": "ab", "version": 0, "state_hash": "cd", "mac": "ef", field: value}
    anchor = tmp_path / "a.jsonl"
    # Python's json writes the 31-digit integer as it is (orjson could not).
    anchor.write_text(json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    result = invoke("replay", board, "--verify", "--anchor", str(anchor), "--key-file", str(key))
    assert result.exit_code not in (0, 3), result.output
    assert "anchor file line 1" in result.stderr
    assert "internal error" not in result.output
