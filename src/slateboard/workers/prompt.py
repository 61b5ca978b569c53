"""Prompts for LLM workers: role, view, writable schema, patch format, example, feedback.

A prompt pays only for what the model needs: when the reply is decoded with the worker's
contract schema (``constrained``), the grammar already enforces the patch format and the
schema, so the prompt carries a one-line shape hint; otherwise it carries the full rules.
No block appears twice (rejections are said once, in the feedback block).

``build_messages`` is deterministic (same inputs, same messages), so recorded/replayed models
match requests exactly. The system message holds what does not change between invocations (the
instruction, the contract, the format and an example built from the worker's own write
patterns); the user message holds the view, the reasons the last proposals were rejected and,
for tool-using workers, the tool list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from ..kernel.canonical import JSON, canonical_str
from ..kernel.pointer import format_pointer
from ..kernel.schema import pattern_locations
from ..models import Message
from .base import Feedback, feedback_lines
from .constrain import PATCH_KEY

if TYPE_CHECKING:
    from ..blueprint.compile import CompiledBlueprint
    from ..kernel.contract import WorkerContract
    from ..views import View
    from .tools import Tool

__all__ = [
    "OVERHEAD_KINDS",
    "PROMPT_PARTS",
    "PromptBlock",
    "build_messages",
    "example_patch",
    "example_value",
    "join_blocks",
    "prompt_accounting",
    "prompt_blocks",
    "prompt_parts",
    "split_tokens",
    "view_payload",
    "writable_lines",
]

_MAX_SCHEMA_CHARS = 600


def example_value(schema: Any, depth: int = 0) -> JSON:
    """A small value that fits ``schema`` in the common cases (const, enum, required members,
    minimums); used only to show the format, never proposed on the worker's behalf."""
    if depth > 4 or not isinstance(schema, dict):
        return "..."
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return example_value(schema[key][0], depth + 1)
    if isinstance(schema.get("examples"), list) and schema["examples"]:
        return schema["examples"][0]
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), t[0] if t else None)
    props = schema.get("properties")
    if t == "object" or (t is None and isinstance(props, dict)):
        props = props if isinstance(props, dict) else {}
        required = [r for r in schema.get("required", []) if isinstance(r, str)]
        keys = required or list(props)[:1]
        return {k: example_value(props.get(k, {}), depth + 1) for k in keys}
    if t == "array":
        n = int(schema.get("minItems", 0) or 0)
        return [example_value(schema.get("items", {}), depth + 1) for _ in range(min(n, 2))]
    if t == "integer":
        return int(schema.get("minimum", 0))
    if t == "number":
        return schema.get("minimum", 0)
    if t == "boolean":
        return True
    if t == "null":
        return None
    return "..."


def _example_path(tokens: tuple[str, ...]) -> tuple[str, ...]:
    return tuple("0" if t == "*" else t for t in tokens if t != "**")


def example_patch(
    blueprint: CompiledBlueprint, contract: WorkerContract, *, placeholder: str | None = None
) -> list[dict[str, JSON]]:
    """A one-op patch in the worker's own terms: its first write pattern (``*`` as ``0``), its
    preferred allowed op (``add`` for appends), and a value shaped like the schema there (or the
    string ``placeholder`` instead of the value, when given)."""
    ops = contract.ops
    for pattern in contract.writes:
        tokens = _example_path(pattern.tokens)
        appends = bool(tokens) and tokens[-1] == "-"
        if appends:
            if "add" not in ops:
                continue
            op = "add"
        else:
            op = next((o for o in ("replace", "add", "remove") if o in ops), "")
            if not op:
                continue
        entry: dict[str, JSON] = {"op": op, "path": format_pointer(tokens)}
        if op != "remove":
            entry["value"] = (
                placeholder if placeholder is not None else example_value(blueprint.schema.fragment(tokens))
            )
        return [entry]
    return []


def writable_lines(blueprint: CompiledBlueprint, contract: WorkerContract, *, with_schema: bool) -> list[str]:
    """One line per write pattern: the pattern, its ops, and (optionally) its value schema."""
    lines = []
    for pattern in contract.writes:
        ops = sorted(contract.ops - {"test"}) or sorted(contract.ops)
        if pattern.tokens and pattern.tokens[-1] == "-":
            ops = [o for o in ops if o in ("add", "copy", "move")]
        line = f"- {pattern.text} (ops: {', '.join(ops)})"
        if with_schema:
            frags = [True if loc.any else loc.schema for loc in pattern_locations(blueprint.schema, pattern.tokens)]
            if frags:
                text = canonical_str(frags[0] if len(frags) == 1 else {"anyOf": frags})
                if len(text) > _MAX_SCHEMA_CHARS:
                    text = text[: _MAX_SCHEMA_CHARS - 1] + "…"
                line += f" value schema: {text}"
        lines.append(line)
    return lines


PromptBlock = tuple[str, str]
"""One labelled block of a prompt: (kind, text). Kinds: ``role`` (the instruction), ``format``
(patch rules, allowed ops, example, shape hint), ``schema`` (writable schema fragments),
``tools``, ``view`` (the board as shown; framing and values), ``event``, ``feedback``."""

OVERHEAD_KINDS = frozenset({"format", "schema"})
"""Block kinds that are pure protocol overhead (no task content)."""


def view_payload(view: View, *, constrained: bool, first: Sequence[str] = ()) -> tuple[str, int]:
    """The board as a prompt shows it, and how many of its characters are data values.

    Unconstrained: the view's canonical JSON without ``rejections`` (the feedback block says
    them once). Constrained: one ``pointer = value`` line per data entry (strings as their text,
    other values as canonical JSON), the pointers named in ``first`` (a worker's pinned paths)
    first in that order and the rest sorted, then the handles, the event and the notes: no
    ``writable`` member, because the decoding grammar already holds the schema of what the
    worker may write. Pinned paths lead so that what changes least between a worker's calls
    (listed first) extends the byte-identical prefix a provider's prompt cache can serve."""
    if not constrained:
        values = sum(len(canonical_str(v)) for v in view.data.values())
        if not view.rejections:
            return view.render(), values
        shown = {k: v for k, v in orjson.loads(view.render()).items() if k != "rejections"}
        return canonical_str(shown), values
    # A string value is shown as its text (a JSON string's quotes and escapes buy nothing here);
    # anything else as canonical JSON. Each value is encoded once, for the line and the count.
    rank = {pointer: n for n, pointer in enumerate(first)}
    texts = [
        (pointer, value if isinstance(value, str) else canonical_str(value))
        for pointer, value in sorted(view.data.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0]))
    ]
    values = sum(len(text) for _, text in texts)
    lines = [f"{pointer} = {text}" for pointer, text in texts]
    for h in view.handles:
        what = f"{h.items} items" if h.items is not None else (h.summary or "")
        lines.append(f"{h.handle}: not shown ({what})")
    event = view.event
    if isinstance(event, dict):
        # An event is worth its tokens only when it points at something the worker sees.
        path = event.get("path")
        if (
            isinstance(path, str)
            and path
            and any(p == path or p.startswith(path + "/") or path.startswith(p + "/") for p in view.data)
        ):
            lines.append(f"event: {event.get('op', '')} {path}")
    elif event is not None:
        lines.append(f"event: {canonical_str(event)}")
    lines.extend(f"note: {n}" for n in view.notes)
    return "\n".join(lines), values


def prompt_blocks(
    blueprint: CompiledBlueprint,
    worker: str,
    view: View,
    event: JSON = None,
    *,
    feedback: Feedback = None,
    tools: Sequence[Tool] = (),
    instruction: str | None = None,
    example_values: bool = False,
    constrained: bool = False,
    payload: tuple[str, int] | None = None,
    output: tuple[str, Mapping[str, Any]] | None = None,
) -> tuple[list[PromptBlock], list[PromptBlock]]:
    """The system and user blocks of one invocation's prompt (``build_messages`` joins them).

    ``constrained=True`` means the reply is decoded with the worker's contract schema (the
    grammar enforces the patch shape, the writable paths and their value schemas): the prompt
    then carries a one-line shape hint instead of the patch rules, the example and the schema,
    and the view without its ``writable`` member. Every block appears once: rejections are
    listed in the feedback block only, never also inside the rendered view.
    ``payload`` is ``view_payload(view, constrained=constrained, first=pinned)`` when the caller already has it
    (it is then not computed again). ``output`` (a worker's typed output: its pointer and the
    value schema there) replaces the patch format by a request for one JSON value of that
    schema, stated in full (a provider may not constrain decoding), or, with ``constrained=True``
    (the reply is decoded against that schema), a one-line hint naming the pointer; the view is
    shown without ``writable``, as when constrained."""
    contract = blueprint.workers[worker]
    role = (instruction if instruction is not None else contract.spec.instruction).strip()
    system: list[PromptBlock] = []
    if role:
        system.append(("role", role))
    if output is not None and constrained:
        # The reply is decoded against the value schema: stating it again buys nothing.
        system.append(("format", f"You are worker {worker!r}. Reply with one JSON value for {output[0]}."))
    elif output is not None:
        system.append(
            (
                "format",
                f"You are worker {worker!r}. Your reply is written to {output[0]}: reply with only one JSON value "
                f"that matches this JSON Schema:\n{canonical_str(dict(output[1]))}",
            )
        )
    elif constrained:
        system.append(
            (
                "format",
                f'You are worker {worker!r}. Reply {{"{PATCH_KEY}":[...]}}.',
            )
        )
    else:
        ops = ", ".join(sorted(contract.ops))
        schema_in_view = any(isinstance(w, dict) and "schema" in w for w in view.writable)
        marker = "\x00VALUE\x00"
        example_ops = example_patch(blueprint, contract, placeholder=None if example_values else marker)
        example = canonical_str({PATCH_KEY: example_ops}).replace(canonical_str(marker), "VALUE")
        rules = [
            f"You are worker {worker!r} on a shared board. You can change the board only by proposing "
            'a JSON Patch (RFC 6902): a list of operations {"op", "path", "value"}.',
            f"Allowed ops: {ops}. Paths you may write:",
        ]
        system.append(("format", "\n".join(rules)))
        system.append(("schema", "\n".join(writable_lines(blueprint, contract, with_schema=not schema_in_view))))
        tail = [
            "'*' in a path stands for one existing key or index; '-' appends to an array.",
            f'Reply with one JSON object only: {{"{PATCH_KEY}": [operations]}}.',
            f"Example: {example}",
        ]
        if not example_values and "VALUE" in example:
            tail.append('where VALUE is your own value, valid for the schema of that path ("writable" in the board).')
        system.append(("format", "\n".join(tail)))
    if tools:
        lines = [
            'Before proposing you may call a tool: reply {"tool": NAME, "args": {...}} and the result '
            "will be sent back. Tools:"
        ]
        for t in tools:
            params = canonical_str(t.parameters) if t.parameters else "{}"
            lines.append(f"- {t.name}: {t.description or 'no description'} args schema: {params}")
        system.append(("tools", "\n".join(lines)))
    user: list[PromptBlock] = []
    stated = output is not None and not constrained  # the value's schema is in the prompt, not the decoding
    if output is not None:
        constrained = True  # the view as a constrained prompt shows it: the format is stated above
    board, _ = (
        payload if payload is not None else view_payload(view, constrained=constrained, first=contract.spec.pinned)
    )
    if constrained:
        user.append(("view", "Board:\n" + board))
    else:
        user.append(
            (
                "view",
                "The board as you see it (JSON; 'data' maps paths to values, 'writable' lists what you may write):\n"
                + board,
            )
        )
    if event is not None and view.event is None:
        user.append(("event", f"Triggering event: {canonical_str(event)}"))
    lines = feedback_lines(view, feedback)
    if lines:
        text = [
            "Your last proposals were rejected:",
            *(f"- {line}" for line in lines),
            "Fix the cause and propose again.",
        ]
        user.append(("feedback", "\n".join(text)))
    if stated:
        user.append(("format", "Reply now with the JSON value."))
    elif not constrained:
        user.append(("format", f'Reply now with {{"{PATCH_KEY}": [...]}}.'))
    return system, user


def build_messages(
    blueprint: CompiledBlueprint,
    worker: str,
    view: View,
    event: JSON = None,
    *,
    feedback: Feedback = None,
    tools: Sequence[Tool] = (),
    instruction: str | None = None,
    example_values: bool = False,
    constrained: bool = False,
) -> list[Message]:
    """The messages for one invocation (see the module docstring and ``prompt_blocks``).

    Unconstrained, the writable schema fragments are in the view (``writable``); when the view
    had to drop them to fit its budget, they are restated (clipped) in the system message
    instead. The example patch shows the op and path and, by default, ``VALUE`` where the value
    goes: small models copy example values verbatim (``example_values=True`` shows a
    schema-shaped value). Constrained (``constrained=True``), a one-line shape hint replaces
    the rules, the example and the schema.
    """
    system, user = prompt_blocks(
        blueprint,
        worker,
        view,
        event,
        feedback=feedback,
        tools=tools,
        instruction=instruction,
        example_values=example_values,
        constrained=constrained,
    )
    return [Message.system(join_blocks(system)), Message.user(join_blocks(user))]


def join_blocks(blocks: Sequence[PromptBlock]) -> str:
    """The text of prompt blocks, one after another (a blank line after the role)."""
    # The role instruction is followed by a blank line, as it always was.
    out: list[str] = []
    for kind, text in blocks:
        out.append(text)
        if kind == "role":
            out.append("")
    return "\n".join(out)


def prompt_accounting(system: Sequence[PromptBlock], user: Sequence[PromptBlock], view_values: int) -> dict[str, int]:
    """Characters of a prompt per kind, with the view split into ``view_data`` (the values
    shown) and ``view_framing`` (pointers, JSON punctuation, handles: what showing costs)."""
    out: dict[str, int] = {}
    for kind, text in [*system, *user]:
        if kind == "view":
            out["view_data"] = out.get("view_data", 0) + view_values
            out["view_framing"] = out.get("view_framing", 0) + max(0, len(text) - view_values)
        else:
            out[kind] = out.get(kind, 0) + len(text)
    return out


PROMPT_PARTS: dict[str, str] = {
    "view": "view",
    "event": "view",
    "format": "format",
    "schema": "format",
    "tools": "format",
    "role": "instruction",
    "feedback": "instruction",
}
"""Which of the three accounting parts each block kind belongs to: the ``view`` (the board as the
worker sees it, and the event that woke it), the output ``format`` (patch rules, writable paths
and their schemas, the example, tool descriptions) and the ``instruction`` (the worker's role and
the feedback on its last proposals). A kind not listed counts as instruction."""


def prompt_parts(system: Sequence[PromptBlock], user: Sequence[PromptBlock]) -> dict[str, int]:
    """Characters of the prompt per part (``PROMPT_PARTS``: view, format, instruction), counted
    over the message texts exactly as ``join_blocks`` lays them out: each block owns the line
    break before it (so adding a block grows only its own part), and the parts add up to the
    length of the system text plus the user text."""
    parts = {"view": 0, "format": 0, "instruction": 0}
    for blocks in (system, user):
        items: list[tuple[str, str]] = []
        for kind, text in blocks:
            items.append((kind, text))
            if kind == "role":
                items.append((kind, ""))  # the blank line after the role (``join_blocks``)
        for n, (kind, text) in enumerate(items):
            part = PROMPT_PARTS.get(kind, "instruction")
            parts[part] += len(text) + (1 if n > 0 else 0)
    return parts


def split_tokens(tokens: int, chars: dict[str, int]) -> dict[str, int]:
    """``tokens`` (a call's prompt tokens, as the model counted them) split over the parts in
    proportion to their characters, largest remainders first, so the parts add up to ``tokens``
    exactly (an estimate of each part's share; the total is the model's)."""
    total = sum(chars.values())
    if total <= 0 or tokens <= 0:
        return {k: 0 for k in chars}
    exact = {k: tokens * v / total for k, v in chars.items()}
    out = {k: int(x) for k, x in exact.items()}
    left = tokens - sum(out.values())
    for k in sorted(exact, key=lambda k: (out[k] - exact[k], k))[:left]:
        out[k] += 1
    return out
