"""Tolerant reading of model replies: find the patch (or a tool call) in whatever came back.

Models wrap JSON in code fences, put prose around it, wrap the patch in an object, or send a
single operation instead of a list. ``parse_reply`` accepts all of these and never raises;
when it finds no patch it keeps the raw text, so the kernel rejects the proposal at stage
``parse`` (or ``ops``) with its own precise reason, and the log shows what the model said.

Tolerance stops where the kernel's strictness starts: a reply over ``REPLY_LIMITS`` (nested
deeper than ``MAX_REPLY_DEPTH``, or over 1 MiB) is not decoded at all (the recursive decoder
would raise RecursionError; a scan of every ``{`` in a huge reply would be slow),
and JSON with a duplicate object key is not resolved last-wins: its text goes to the kernel,
which rejects it at ``parse`` exactly as it does on the kernel API.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import SlateboardError
from ..kernel.canonical import JSON
from ..kernel.jsonvalue import REPLY_LIMITS, JsonLimits, nesting_depth, over_limits
from ..kernel.kernel import declined_reason
from ..views import parse_expand_request

__all__ = ["MAX_REPLY_DEPTH", "PATCH_KEYS", "ParsedReply", "ToolCall", "parse_reply", "parse_value", "reply_fault"]

MAX_REPLY_DEPTH = REPLY_LIMITS.max_depth
"""Replies whose brackets nest deeper than this are left as raw text (the kernel's own limit,
``limits.max_depth``, is far lower, so nothing the kernel could accept is lost)."""

PATCH_KEYS = ("patch", "operations", "json_patch")
"""Members of a reply object that are read as the patch (the first present wins)."""

# A '[' or '{' followed by another bracket or a quote starts a JSON document, not prose such as
# "[see below]": if it does not decode, nothing inside it is trusted (see _embedded).
_STRUCTURED = re.compile(r"[\[{]\s*[\[{\"]")
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n?(.*?)(?:```|\Z)", re.DOTALL)
_MAX_STARTS = 64


class _DuplicateKey(SlateboardError, ValueError):
    """Raised while decoding: an object repeats a key (JSON leaves the meaning undefined)."""


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


_DECODER = json.JSONDecoder(object_pairs_hook=_unique_pairs)
_LENIENT = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class _Found:
    """One decoded JSON value: where it came from, and its source text when it repeats a key."""

    origin: str
    value: Any
    duplicate: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A reply asking to run a declared tool: ``{"tool": name, "args": {...}}``."""

    name: str
    args: dict[str, JSON] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ParsedReply:
    """What a reply holds.

    ``patch`` is the list of operations when one was found (``ok`` True), else text for the
    kernel to reject: the raw reply, or (``+duplicate-key``) the JSON document that repeats a key.
    ``how`` says how it was found: ``json`` (the whole reply), ``fenced`` (a code block),
    ``embedded`` (JSON inside prose), each optionally followed by ``+wrapped`` (``{"patch": ...}``)
    or ``+single-op`` (one operation object), or by ``+duplicate-key``; ``tool`` for a tool call;
    ``+decline`` (the worker declines: ``patch`` is ``{"decline": reason}``, which the kernel
    logs as a no-op at stage ``decline``); ``raw`` when nothing was found (or the reply nests deeper than MAX_REPLY_DEPTH). ``expand`` holds the handles the reply asked to see (see slateboard.views).
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
                    inner = _DECODER.decode(inner) if nesting_depth(inner) <= MAX_REPLY_DEPTH else inner
                except _DuplicateKey:
                    return 1, inner, "+wrapped", None  # left as text: the kernel rejects it at parse
                except (ValueError, RecursionError):
                    return 1, inner, "+wrapped", None
            if isinstance(inner, dict) and "op" in inner:
                return 2, [inner], "+wrapped+single-op", None
            score, patch, _, _ = _normalise(inner) if isinstance(inner, list) else (1, inner, "", None)
            return max(score, 1), patch, "+wrapped", None
    if "op" in value:
        return 2, [value], "+single-op", None
    if declined_reason(value) is not None:
        return 2, value, "+decline", None
    name = value.get("tool")
    if isinstance(name, str):
        args = value.get("args", value.get("arguments", {}))
        if isinstance(args, str):
            try:
                args = _DECODER.decode(args) if nesting_depth(args) <= MAX_REPLY_DEPTH else {"input": args}
            except (ValueError, RecursionError):  # also a repeated key: the text is passed as is
                args = {"input": args}
        if not isinstance(args, dict):
            args = {"input": args}
        return 2, None, "tool", ToolCall(name, args)
    return 0, None, "", None


def _decode(text: str, origin: str) -> _Found:
    """Decode a whole document strictly; raises ValueError when it is not JSON."""
    try:
        return _Found(origin, _DECODER.decode(text))
    except _DuplicateKey:
        return _Found(origin, _LENIENT.decode(text), text)


def _candidates(text: str) -> list[_Found]:
    """Decoded JSON values in the reply, in preference order, with where they came from."""
    out: list[_Found] = []
    stripped = text.strip()
    try:
        out.append(_decode(stripped, "json"))
        return out
    except ValueError:
        pass
    for match in _FENCE.finditer(text):
        block = match.group(2).strip()
        try:
            out.append(_decode(block, "fenced"))
        except ValueError:
            out.extend(_Found("fenced", v, dup) for v, dup in _embedded(block))
    out.extend(_Found("embedded", v, dup) for v, dup in _embedded(text))
    return out


def _embedded(text: str) -> list[tuple[Any, str | None]]:
    """JSON arrays/objects found inside prose, outermost first, at most _MAX_STARTS tries,
    each with its source text when it repeats an object key (else None).

    The search stops at the first JSON document that does not decode (a truncated or garbled
    reply): the complete operations inside a broken document are not the model's patch, and
    committing some of them would be a partial write the model never proposed.
    """
    found: list[tuple[Any, str | None]] = []
    pos = 0
    tries = 0
    while tries < _MAX_STARTS:
        starts = [i for i in (text.find("[", pos), text.find("{", pos)) if i >= 0]
        if not starts:
            break
        start = min(starts)
        tries += 1
        duplicate: str | None = None
        try:
            try:
                value, end = _DECODER.raw_decode(text, start)
            except _DuplicateKey:
                value, end = _LENIENT.raw_decode(text, start)
                duplicate = text[start:end]
        except ValueError:
            if _STRUCTURED.match(text, start):
                break
            pos = start + 1
            continue
        found.append((value, duplicate))
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
    if over_limits(text, REPLY_LIMITS, "reply") is not None:
        return ParsedReply(text, False, "raw")
    fallback: ParsedReply | None = None
    try:
        found = _candidates(text)
    except RecursionError:  # a decoder recursing on a caller's deep stack: same as too deep
        return ParsedReply(text, False, "raw")
    for candidate in found:
        origin, value = candidate.origin, candidate.value
        score, patch, suffix, tool = _normalise(value)
        expand = parse_expand_request(value) if isinstance(value, dict) else ()
        if candidate.duplicate is not None and score > 0:
            # Never resolve a repeated key last-wins: hand the exact text to the kernel, which
            # rejects it at stage parse naming the key (as it does on the kernel API).
            return ParsedReply(candidate.duplicate, False, origin + "+duplicate-key", expand)
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


def reply_fault(text: str, limits: JsonLimits = REPLY_LIMITS) -> str | None:
    """Why a model's reply is over ``limits`` (its size in bytes or its bracket nesting), naming
    the bound, or None. Linear and non-recursive: every role that reads a reply (an LLM worker,
    a team agent or decider, a coordinator, the Architect) asks this before decoding it. A worker
    proposes an over-bound reply as raw text, so the kernel rejects it at stage ``parse`` with
    its own reason (and the worker is told, as of any rejection)."""
    return over_limits(text, limits, "reply")


def parse_value(text: str) -> JSON:
    """The JSON value of a typed reply (one value, not a patch): the whole text as JSON, else the
    first JSON object in it (a fenced block, prose around it), else the text itself, which the
    kernel then rejects at stage ``schema`` with a reason the worker is told on its retry.
    Text over ``REPLY_LIMITS`` is never decoded (it comes back as text); workers check
    ``reply_fault`` first and propose such a reply as it is, for the kernel to reject at ``parse``."""
    stripped = text.strip()
    if over_limits(stripped, REPLY_LIMITS, "reply") is not None:
        return stripped
    try:
        value: JSON = _DECODER.decode(stripped)
    except _DuplicateKey:
        return stripped  # a repeated key has no one meaning: not a value to commit
    except ValueError:
        for found, duplicate in _embedded(stripped):
            if isinstance(found, dict) and duplicate is None:
                return found
        return stripped
    return value
