"""Accepting a rule's ``join`` or ``batch`` (``scheduling.gather`` runs them): every bound is
checked when the blueprint is accepted, and each issue names the rule, so a batch of size 0, a
negative timeout, a join of one part or a key that does not compile is a ``BlueprintError`` at
build time, never a surprise during a run. Nothing a join or a batch holds is unbounded: parts,
keys remembered, events per batch and seconds waited all have a ceiling here."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..kernel.cel import CelExpr
from ..kernel.pointer import Pattern, escape_token
from ._celvars import RULE_VARIABLES
from .models import RuleSpec, Trigger

__all__ = [
    "DEFAULT_MAX_KEYS",
    "MAX_BATCH",
    "MAX_KEYS",
    "MAX_PARTS",
    "MAX_SECONDS",
    "CompiledBatch",
    "CompiledJoin",
    "CompiledPart",
    "compile_gather",
    "gather_issues",
    "unquoted_on",
]

MAX_BATCH = 1000
"""The most events one batch collects (its invocation's event lists them all)."""
MAX_PARTS = 16
"""The most parts one join correlates."""
DEFAULT_MAX_KEYS = 1000
"""Keys a join remembers (open and fired) unless its ``max_keys`` says otherwise."""
MAX_KEYS = 100_000
"""The ceiling of a join's ``max_keys``."""
MAX_SECONDS = 7 * 86_400.0
"""The longest window or batch timeout: a week."""
MAX_VERSIONS = 1_000_000_000
"""The widest window in versions."""


@dataclass(frozen=True, slots=True)
class CompiledPart:
    """One part of a join: its name, trigger (op and pattern), condition and key, compiled."""

    name: str
    op: str
    pattern: Pattern
    key: CelExpr
    when: CelExpr | None


@dataclass(frozen=True, slots=True)
class CompiledJoin:
    """A rule's join, checked: its parts in blueprint order and its bounds."""

    parts: tuple[CompiledPart, ...]
    within_versions: int | None
    within_seconds: float | None
    max_keys: int


@dataclass(frozen=True, slots=True)
class CompiledBatch:
    """A rule's batch, checked: events per batch and the timeout (None: size only)."""

    size: int
    seconds: float | None


Issue = Callable[[str, str], None]
Cel = Callable[[str | None, str, frozenset[str]], CelExpr | None]
Parse = Callable[[str, str], Pattern | None]
Unreached = Callable[[tuple[str, ...]], str | None]


def unquoted_on(data: Any) -> None:
    """Give back ``on`` to the rules (and join parts) of a blueprint read from YAML where YAML 1.1
    read an unquoted ``on:`` key as the boolean true (a rule never means that)."""
    rules = data.get("rules") if isinstance(data, dict) else None
    for rule in rules if isinstance(rules, list) else ():
        if not isinstance(rule, dict):
            continue
        join = rule.get("join")
        parts = join.get("parts") if isinstance(join, dict) else None
        for item in [rule, *(parts.values() if isinstance(parts, dict) else ())]:
            if isinstance(item, dict) and True in item and "on" not in item:
                item["on"] = item.pop(True)


def gather_issues(rule: RuleSpec, index: int) -> list[tuple[str, str]]:
    """The bounds of rule ``index``'s join or batch it breaks, as (path, message) pairs naming
    the rule: what a builder checks while a board is declared, and ``compile_gather`` first."""
    found: list[tuple[str, str]] = []
    name, where = rule.name or f"rule{index}", f"/rules/{index}"
    said = f"rule {name!r}"
    if rule.join is not None and rule.batch is not None:
        return [(where, f"{said} has both a join and a batch; a rule gathers one way")]
    if rule.batch is not None:
        batch = rule.batch
        _seconds(batch.seconds, f"{said}: batch seconds", f"{where}/batch/seconds", found)
        if isinstance(batch.size, bool) or not 1 <= batch.size <= MAX_BATCH:
            found.append((f"{where}/batch/size", f"{said}: batch size must be from 1 to {MAX_BATCH}, got {batch.size}"))
        if rule.on.op == "start":
            found.append((f"{where}/on/op", f"{said}: a batch collects committed events; 'start' is not one"))
    if rule.join is not None:
        join = rule.join
        if rule.on != Trigger() or rule.when is not None:
            found.append((where, f"{said}: a join waits for its parts; put 'on' and 'when' in each part"))
        if not 2 <= len(join.parts) <= MAX_PARTS:
            message = f"{said}: a join correlates 2 to {MAX_PARTS} parts, got {len(join.parts)}"
            found.append((f"{where}/join/parts", message))
        if join.within_versions is not None and not 1 <= join.within_versions <= MAX_VERSIONS:
            message = f"{said}: within_versions must be from 1 to {MAX_VERSIONS}, got {join.within_versions}"
            found.append((f"{where}/join/within_versions", message))
        _seconds(join.within_seconds, f"{said}: within_seconds", f"{where}/join/within_seconds", found)
        if join.max_keys is not None and not 1 <= join.max_keys <= MAX_KEYS:
            message = f"{said}: max_keys must be from 1 to {MAX_KEYS}, got {join.max_keys}"
            found.append((f"{where}/join/max_keys", message))
        for part_name, part in join.parts.items():
            if part.on.op == "start":
                at = f"{where}/join/parts/{escape_token(part_name)}/on/op"
                found.append((at, f"{said}: part {part_name!r} waits for a committed event; 'start' is not one"))
    return found


def compile_gather(
    rule: RuleSpec, index: int, issue: Issue, cel: Cel, pattern: Parse, unreached: Unreached
) -> CompiledJoin | CompiledBatch | None:
    """Rule ``index``'s join or batch compiled (None when it has neither, or on an issue, which
    ``issue(path, message)`` reports naming the rule). ``cel`` compiles a CEL expression for a
    context, ``pattern`` a pointer pattern, ``unreached`` says why a pattern reaches no location
    of the state schema (the helpers of ``compile``, which report their own issues)."""
    bounds = gather_issues(rule, index)
    for where, message in bounds:
        issue(where, message)
    if rule.batch is not None and rule.join is None:
        return None if bounds else CompiledBatch(rule.batch.size, rule.batch.seconds)
    if rule.join is None or rule.batch is not None:
        return None
    said, ok = f"rule {rule.name or f'rule{index}'!r}", not bounds
    parts: list[CompiledPart] = []
    for part_name, part in rule.join.parts.items():
        at = f"/rules/{index}/join/parts/{escape_token(part_name)}"
        p = pattern(part.on.path, f"{at}/on/path")
        if p is not None and (why := unreached(p.tokens)) is not None:
            message = f"{said}: part {part_name!r} path {part.on.path!r} matches no location of the state schema{why}"
            issue(f"{at}/on/path", message)
        key = cel(part.key, f"{at}/key", RULE_VARIABLES)
        when = cel(part.when, f"{at}/when", RULE_VARIABLES)
        if p is None or key is None:
            ok = False
            continue
        parts.append(CompiledPart(part_name, part.on.op, p, key, when))
    if not ok:
        return None
    join = rule.join
    keys = DEFAULT_MAX_KEYS if join.max_keys is None else join.max_keys
    return CompiledJoin(tuple(parts), join.within_versions, join.within_seconds, keys)


def _seconds(value: float | None, what: str, where: str, found: list[tuple[str, str]]) -> None:
    """An issue unless ``value`` is None or a finite number of seconds in (0, MAX_SECONDS]."""
    if value is not None and not (math.isfinite(value) and 0 < value <= MAX_SECONDS):
        found.append((where, f"{what} must be more than 0 and at most {MAX_SECONDS:g} (a week), got {value}"))
