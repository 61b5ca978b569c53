"""D3 and D6: hostile model replies on the LLM path end as logged rejections at ``parse``.

Before: a reply nested 5,000 levels deep raised RecursionError out of ``parse_reply`` (the
run died with "internal error", the board stayed ``running``, the reply was not logged), and
duplicate object keys were resolved last-wins although the kernel API rejects them.
"""

from __future__ import annotations

import json
from typing import Any

from reliability_testkit import Invoke, scripted_blueprint

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import Kernel, Proposal
from slateboard.models import ScriptedModel
from slateboard.views import kernel_view
from slateboard.workers import LLMWorker
from slateboard.workers.parse import parse_reply

DEEP = "[" * 5000 + "]" * 5000
DEEP_OBJECT = '{"patch":' * 3000 + "1" + "}" * 3000
DUPLICATE = '[{"op": "add", "path": "/notes/-", "value": "a", "path": "/task"}]'

NOTES: dict[str, Any] = {
    "schema": {
        "type": "object",
        "properties": {"task": {"type": "string"}, "notes": {"type": "array", "items": {"type": "string"}}},
    },
    "initial_state": {"task": "", "notes": []},
    "workers": {"a": {"reads": ["/notes"], "writes": ["/notes/-"]}},
}


def test_d3_parse_reply_never_raises_on_deep_nesting() -> None:
    for text in (DEEP, DEEP_OBJECT, f"here you go:\n```json\n{DEEP}\n```", "prose " + DEEP):
        parsed = parse_reply(text)
        assert not parsed.ok and parsed.patch == text and parsed.how == "raw"


def test_d3_deep_text_is_rejected_by_the_kernel_at_parse_with_the_depth() -> None:
    kernel = Kernel(compile_blueprint(NOTES))
    decision = kernel.submit(Proposal("a", DEEP))
    assert decision.stage == "parse" and "nests deeper than" in (decision.reason or "")


async def test_d3_llm_worker_deep_reply_becomes_a_parse_rejection() -> None:
    bp = compile_blueprint(NOTES)
    kernel = Kernel(bp)
    worker = LLMWorker(bp, "a", ScriptedModel([DEEP]), state=lambda: kernel.state)
    view = kernel_view(kernel, "a")
    reply = await worker.propose(view)
    decision = kernel.submit(reply.to_proposal(view))
    assert decision.stage == "parse", decision.reason
    assert decision.record.patch == DEEP  # the reply is in the log


def test_d3_cli_run_logs_the_rejection_and_ends_the_board(invoke: Invoke, write_file: Any) -> None:
    path = write_file("deep.yaml", scripted_blueprint([DEEP], max_steps=3))
    result = invoke("run", str(path), "--json")
    assert "internal error" not in result.output
    data = json.loads(result.stdout)
    board = data["board_id"]
    info = next(b for b in invoke.json("boards") if b["board_id"] == board)
    assert info["status"] != "running"
    records = invoke.json("log", board)["records"]
    first = records[0]
    assert first["stage"] == "parse" and first["patch"] == DEEP
    assert all(r["stage"] != "internal" for r in records)


def test_d6_parse_reply_refuses_duplicate_keys() -> None:
    for text, how in (
        (DUPLICATE, "json+duplicate-key"),
        (f"Here:\n```json\n{DUPLICATE}\n```", "fenced+duplicate-key"),
        (f"My patch is {DUPLICATE} as asked.", "embedded+duplicate-key"),
        ('{"patch": [{"op": "add", "path": "/notes/-", "value": "a"}], "patch": []}', "json+duplicate-key"),
    ):
        parsed = parse_reply(text)
        assert not parsed.ok and parsed.how == how, (text, parsed)
        assert isinstance(parsed.patch, str) and "duplicate" not in parsed.patch


async def test_d6_llm_worker_duplicate_keys_are_rejected_at_parse() -> None:
    bp = compile_blueprint(NOTES)
    kernel = Kernel(bp)
    worker = LLMWorker(bp, "a", ScriptedModel([f"```json\n{DUPLICATE}\n```"]), state=lambda: kernel.state)
    view = kernel_view(kernel, "a")
    reply = await worker.propose(view)
    decision = kernel.submit(reply.to_proposal(view))
    assert decision.stage == "parse" and "duplicate object key 'path'" in (decision.reason or "")
    assert kernel.state == {"task": "", "notes": []}


def test_d6_unique_keys_still_parse() -> None:
    parsed = parse_reply('```json\n{"patch": [{"op": "add", "path": "/notes/-", "value": "a"}]}\n```')
    assert parsed.ok and parsed.patch == [{"op": "add", "path": "/notes/-", "value": "a"}]
