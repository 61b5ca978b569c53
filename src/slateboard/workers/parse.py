"""Tolerant reading of model replies: find the patch (or a tool call) in whatever came back.

Models wrap JSON in code fences, put prose around it, wrap the patch in an object, or send a
single operation instead of a list. ``parse_reply`` accepts all of these and never raises;
when it finds no patch it keeps the raw text, so the kernel rejects the proposal at stage
``parse`` (or ``ops``) with its own precise reason, and the log shows what the model said.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..kernel.canonical import JSON
from ..views import parse_expand_request

__all__ = ["PATCH_KEYS", "ParsedReply", "ToolCall", "parse_reply"]

PATCH_KEYS = ("patch", "operations", "json_patch")
"""Members of a reply object that are read as the patch (the first present wins)."""

# A '[' or '{' followed by another bracket or a quote starts a JSON document, not prose such as
# "[see below]": if it does not decode, nothing inside it is trusted (see _embedded).
_STRUCTURED = re.compile(r"[\[{]\s*[\[{\"]")
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n?(.*?)(?:```|\Z)", re.DOTALL)
_MAX_STARTS = 64
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A reply asking to run a declared tool: ``{"tool": name, "args": {...}}``."""

    name: str
    args: dict[str, JSON] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ParsedReply:
    """What a reply holds.

    ``patch`` is the list of operations when one was found (``ok`` True), else the raw text.
    ``how`` says how it was found: ``json`` (the whole reply), ``fenced`` (a code block),
    ``embedded`` (JSON inside prose), each optionally followed by ``+wrapped`` (``{"patch": ...}``)
    or ``+single-op`` (one operation object); ``tool`` for a tool call; ``raw`` when nothing was
    found. ``expand`` holds the handles the reply asked to see (see slateboard.views).
    """

    patch: Any
    ok: bool
    how: str
    expand: tuple[str, ...] = ()
    tool: ToolCall | None = None


def _normalise(value: Any) -> tuple[int, Any, str, ToolCall | None]:
    """Score a decoded value: 2 = a patch of op objects or a tool call, 1 = some list, 0 = no."""
    if isinstance(value, list):
        if value and all(isinstance(v, dict) and "op" in v for v in value):
            return 2, value, "", None
        return 1, value, "", None
    if not isinstance(value, dict):
        return 0, None, "", None
    for key in PATCH_KEYS:
        if key in value:
            inner = value[key]
            if isinstance(inner, str):
                try:
                    inner = json.loads(inner)
                except ValueError:
                    return 1, inner, "+wrapped", None
            if isinstance(inner, dict) and "op" in inner:
                return 2, [inner], "+wrapped+single-op", None
            score, patch, _, _ = _normalise(inner) if isinstance(inner, list) else (1, inner, "", None)
            return max(score, 1), patch, "+wrapped", None
    if "op" in value:
        return 2, [value], "+single-op", None
    name = value.get("tool")
    if isinstance(name, str):
        args = value.get("args", value.get("arguments", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                args = {"input": args}
        if not isinstance(args, dict):
            args = {"input": args}
        return 2, None, "tool", ToolCall(name, args)
    return 0, None, "", None


def _candidates(text: str) -> list[tuple[str, Any]]:
    """Decoded JSON values in the reply, in preference order, with where they came from."""
    out: list[tuple[str, Any]] = []
    stripped = text.strip()
    try:
        out.append(("json", json.loads(stripped)))
        return out
    except ValueError:
        pass
    for match in _FENCE.finditer(text):
        block = match.group(2).strip()
        try:
            out.append(("fenced", json.loads(block)))
        except ValueError:
            out.extend(("fenced", v) for v in _embedded(block))
    out.extend(("embedded", v) for v in _embedded(text))
    return out


def _embedded(text: str) -> list[Any]:
    """JSON arrays/objects found inside prose, outermost first, at most _MAX_STARTS tries.

    The search stops at the first JSON document that does not decode (a truncated or garbled
    reply): the complete operations inside a broken document are not the model's patch, and
    committing some of them would be a partial write the model never proposed.
    """
    found: list[Any] = []
    pos = 0
    tries = 0
    while tries < _MAX_STARTS:
        starts = [i for i in (text.find("[", pos), text.find("{", pos)) if i >= 0]
        if not starts:
            break
        start = min(starts)
        tries += 1
        try:
            value, end = _DECODER.raw_decode(text, start)
        except ValueError:
            if _STRUCTURED.match(text, start):
                break
            pos = start + 1
            continue
        found.append(value)
        pos = end
    return found


def parse_reply(text: str | bytes) -> ParsedReply:
    """Find the patch or tool call in a model reply; never raises (see ParsedReply).

    Preference: the first value that is a list of operation objects, a wrapper object holding
    one, a single operation object, or a tool call; else the first list found (the kernel will
    say what is wrong with it); else the raw text.
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "replace")
    fallback: ParsedReply | None = None
    for origin, value in _candidates(text):
        score, patch, suffix, tool = _normalise(value)
        expand = parse_expand_request(value) if isinstance(value, dict) else ()
        if score == 2:
            if tool is not None:
                return ParsedReply(None, False, "tool", expand, tool)
            return ParsedReply(patch, True, origin + suffix, expand)
        if score == 1 and fallback is None:
            ok = isinstance(patch, list)
            fallback = ParsedReply(patch if ok else text, ok, origin + suffix if ok else "raw", expand)
    if fallback is not None:
        return fallback
    return ParsedReply(text, False, "raw")
