"""Tolerant reading of model replies."""

from __future__ import annotations

from typing import Any

import pytest

from slateboard.kernel import Kernel, Proposal
from slateboard.workers.parse import ToolCall, parse_reply

OP = {"op": "add", "path": "/notes/-", "value": {"text": "hi", "author": "scribe"}}

CASES: list[tuple[str, str, Any, str]] = [
    ("bare list", '[{"op":"add","path":"/notes/-","value":{"text":"hi","author":"scribe"}}]', [OP], "json"),
    ("wrapper", '{"patch": [{"op":"add","path":"/notes/-","value":{"text":"hi","author":"scribe"}}]}', [OP],
     "json+wrapped"),
    ("single op", '{"op":"add","path":"/notes/-","value":{"text":"hi","author":"scribe"}}', [OP], "json+single-op"),
    ("wrapper of single op", '{"patch": {"op":"add","path":"/notes/-","value":{"text":"hi","author":"scribe"}}}',
     [OP], "json+wrapped+single-op"),
    ("wrapper with string patch", '{"patch": "[{\\"op\\":\\"add\\",\\"path\\":\\"/notes/-\\",\\"value\\":{\\"text\\":\\"hi\\",\\"author\\":\\"scribe\\"}}]"}',
     [OP], "json+wrapped"),
    ("operations key", '{"operations": [{"op":"add","path":"/notes/-","value":{"text":"hi","author":"scribe"}}]}',
     [OP], "json+wrapped"),
    ("fenced", 'Here you go:\n```json\n[{"op":"add","path":"/notes/-","value":{"text":"hi","author":"scribe"}}]\n```\n',
     [OP], "fenced"),
    ("fenced no lang, wrapper", '```\n{"patch":[{"op":"add","path":"/notes/-","value":{"text":"hi","author":"scribe"}}]}\n```',
     [OP], "fenced+wrapped"),
    ("unterminated fence", '```json\n[{"op":"add","path":"/notes/-","value":{"text":"hi","author":"scribe"}}]', [OP],
     "fenced"),
    ("prose around", 'Sure! I will add a note [see below]: {"op":"add","path":"/notes/-","value":{"text":"hi","author":"scribe"}} Done.',
     [OP], "embedded+single-op"),
    ("prose with braces first", 'Note {not json} then [{"op":"add","path":"/notes/-","value":{"text":"hi","author":"scribe"}}]',
     [OP], "embedded"),
    ("whitespace", '\n\n  [{"op":"add","path":"/notes/-","value":{"text":"hi","author":"scribe"}}]  \n', [OP], "json"),
]  # fmt: skip


@pytest.mark.parametrize(("label", "text", "patch", "how"), CASES, ids=[c[0] for c in CASES])
def test_patch_is_found(label: str, text: str, patch: Any, how: str) -> None:
    parsed = parse_reply(text)
    assert parsed.ok, label
    assert parsed.patch == patch
    assert parsed.how == how
    assert parsed.tool is None


GARBAGE = [
    "",
    "I cannot help with that.",
    '{"answer": 42}',
    '{"patch": 7',
    "```json\n{broken\n```",
    "null",
    # Broken documents: the complete operations inside them are not salvaged as a partial patch.
    '[{"op":"add","path":"/notes/-","value":{"text":"hi","author":"scribe"}}, {"op":"add","path":',
    'Here: [{"op":"add","path":"/notes/-","value":{"text":"hi","author":"scribe"}}, {"op": "add" "path"}]',
    '```json\n{"patch": [{"op":"add","path":"/notes/-","value":{"text":"hi","author":"scribe"}}, oops]}\n```',
    '{"patch": [], "note": unquoted}',
]


@pytest.mark.parametrize("text", GARBAGE)
def test_garbage_keeps_the_raw_text_and_the_kernel_rejects_it_at_parse(text: str) -> None:
    from workers_testkit import notes_blueprint

    parsed = parse_reply(text)
    assert not parsed.ok
    assert parsed.patch == text
    assert parsed.how == "raw"
    decision = Kernel(notes_blueprint()).submit(Proposal("scribe", parsed.patch))
    assert decision.stage == "parse"
    assert decision.record.patch in (text, text.replace(" ", ""))  # valid JSON is logged canonically


def test_a_list_that_is_not_a_patch_is_passed_on_for_the_kernel_to_judge() -> None:
    parsed = parse_reply("the values are [1, 2]")
    assert parsed.ok and parsed.patch == [1, 2] and parsed.how == "embedded"
    # a patch found later beats an earlier non-patch list
    parsed = parse_reply('see [1] and [{"op":"add","path":"/a","value":1}]')
    assert parsed.patch == [{"op": "add", "path": "/a", "value": 1}]


def test_tool_calls_and_expand_requests() -> None:
    parsed = parse_reply('{"tool": "lookup", "args": {"q": "sky"}}')
    assert parsed.tool == ToolCall("lookup", {"q": "sky"}) and parsed.how == "tool" and not parsed.ok
    parsed = parse_reply('{"tool": "lookup", "arguments": "{\\"q\\": \\"x\\"}"}')
    assert parsed.tool == ToolCall("lookup", {"q": "x"})
    parsed = parse_reply('{"tool": "lookup", "args": "plain"}')
    assert parsed.tool == ToolCall("lookup", {"input": "plain"})
    parsed = parse_reply('{"patch": [{"op":"add","path":"/a","value":1}], "expand": ["/claims#c1", 3, "/claims#c1"]}')
    assert parsed.ok and parsed.expand == ("/claims#c1",)


def test_bytes_are_accepted() -> None:
    assert parse_reply(b'[{"op":"add","path":"/a","value":1}]').ok
