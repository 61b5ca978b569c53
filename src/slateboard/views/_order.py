"""The order in which the fill considers the members of an opened collection (views._fill).

What a worker should see first comes first: expansion targets, then members of requested ranges,
then the triggering event's and recent nodes, then everything else; within one urgency shallower
members before deeper ones; among siblings, an object's scalars before the containers its schema
requires before the rest, and an array's newest members first. Each member gets a queue key
``(urgency, depth, member class, rank)`` that orders it against every other member of the view
(views._fill keeps one queue for the whole region).

Guarantees: ``Priorities.best_first(node)`` yields every member of ``node`` exactly once, at the
least key any target gives it, in increasing key order, lazily (an array may be long).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from ..kernel.pointer import Tokens
from ._region import RNode

if TYPE_CHECKING:
    from ..kernel.protocol import KernelBlueprint

Key = tuple[int, int, int, int]
"""A member's place in the fill queue: (urgency, depth, member class, rank), least first."""

# Urgency: which target a member serves (the key's first field). Final: compiled, inlined.
EXPANDED: Final = 0  # an expansion target, or on the way to one
IN_RANGE: Final = 1  # a member of a requested range (or on the way to one)
RECENT: Final = 2  # the triggering event's node, a recent node, or on the way to one
QUIET: Final = 3  # no target relates to it

# Member class: its place among siblings of one urgency (the key's third field).
SCALAR: Final = 0  # an object's scalar member
REQUIRED: Final = 1  # an object's container member that the schema requires
OTHER: Final = 2  # any other container, and every array member
REOPEN: Final = -1  # a HANDLE queued to be opened: before the members one level down (views._fill)


@dataclass(slots=True)
class Targets:
    """What the builder shows first: expansion items and ranges, then event/recent paths."""

    items: list[RNode] = field(default_factory=list)
    ranges: list[tuple[RNode, int, int]] = field(default_factory=list)
    soft: list[Tokens] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Priorities:
    """The queue keys of one build's members, from its targets and its schema (see module).

    ``required`` is the build's table of schema-required member names per object (shared by the
    build's attempts, views._costs.FillMemo); everything else is computed from the targets.
    """

    __slots__ = ("blueprint", "required_names", "targets")

    def __init__(self, targets: Targets, blueprint: KernelBlueprint, required: dict[Tokens, frozenset[str]]) -> None:
        self.targets = targets
        self.blueprint = blueprint
        self.required_names = required

    def urgency_below(self, node: RNode) -> int:
        """The urgency every member of ``node`` has at least (from targets at or above it)."""
        tokens = node.tokens
        depth = len(tokens)
        urgency = QUIET
        for item in self.targets.items:
            if tokens[: len(item.tokens)] == item.tokens:
                return EXPANDED
        for collection, start, stop in self.targets.ranges:
            above = collection.tokens
            if depth > len(above) and tokens[: len(above)] == above:
                member = collection.member(tokens[len(above)])
                if member is not None and start <= member.pos < stop:
                    urgency = IN_RANGE
        if urgency == QUIET:
            for path in self.targets.soft:
                if tokens[: len(path)] == path:
                    return RECENT
        return urgency

    def best_first(self, node: RNode) -> Iterator[tuple[Key, RNode]]:
        """The members of ``node`` best first, lazily, each with its queue key.

        Not itself a generator: compiled, a generator that delegates with ``yield from`` passes
        every member through two generator frames, and this feeds every promotion (issue 14)."""
        count = node.count()
        depth = node.depth + 1
        base = self.urgency_below(node)
        tokens = node.tokens
        # Members on the way to a target, with the urgency it gives them (at most ``base``).
        special: dict[int, int] = {}
        for urgency, paths in ((EXPANDED, [i.tokens for i in self.targets.items]), (RECENT, self.targets.soft)):
            for path in paths:
                if len(path) >= depth and path[: depth - 1] == tokens:
                    member = node.member(path[depth - 1])
                    if member is not None:
                        special[member.pos] = min(special.get(member.pos, QUIET), urgency, base)
        ranges: list[tuple[int, int]] = []  # requested ranges of this very collection
        for collection, start, stop in self.targets.ranges:
            path = collection.tokens
            if path == tokens:
                ranges.append((start, stop))
            elif len(path) >= depth and path[: depth - 1] == tokens:
                member = node.member(path[depth - 1])
                if member is not None:
                    special[member.pos] = min(special.get(member.pos, QUIET), IN_RANGE, base)
        if not node.is_list:
            return self._object_order(node, count, depth, base, special, ranges)
        if not ranges:
            return _array_order(node, count, depth, base, special)
        return _merged_array_order(node, count, depth, base, special, ranges)

    def _object_order(
        self, node: RNode, count: int, depth: int, base: int, special: dict[int, int], ranges: list[tuple[int, int]]
    ) -> Iterator[tuple[Key, RNode]]:
        """best_first for an object: every member's key is known at once, so one sort replaces a
        merge of sorted streams (the same order: items compare whole, and the first of a
        member's keys is its least)."""
        required = self.required(node)
        keyed = [((u, member_class(node, p, required), p), p) for p, u in special.items()]
        for start, stop in ranges:
            keyed.extend(((min(IN_RANGE, base), member_class(node, p, required), p), p) for p in range(start, stop))
        keyed.extend(((base, member_class(node, p, required), p), p) for p in range(count))
        keyed.sort()
        return _first_keys(node, depth, keyed)

    def required(self, node: RNode) -> frozenset[str]:
        """The member names the schema requires of object ``node`` (empty for anything else)."""
        names = self.required_names.get(node.tokens)
        if names is None:
            names = frozenset()
            if isinstance(node.value, dict):
                _, location = self.blueprint.schema.locate(node.tokens)
                if location is not None and isinstance(location.schema, dict):
                    listed = location.schema.get("required")
                    if isinstance(listed, list):
                        names = frozenset(r for r in listed if isinstance(r, str))
            self.required_names[node.tokens] = names
        return names

    def leads(self, node: RNode) -> bool:
        """True for an expansion target and for a node with a target below it: such a node is
        opened rather than summarised when it does not fit in full."""
        tokens = node.tokens
        depth = len(tokens)
        for item in self.targets.items:
            if item.tokens[:depth] == tokens:
                return True
        for path in self.targets.soft:
            if len(path) > depth and path[:depth] == tokens:
                return True
        # No generator for an empty list (the usual case): this runs for every member that does
        # not fit in full, and creating the generator cost more than the test.
        ranges = self.targets.ranges
        return bool(ranges) and any(c.tokens[:depth] == tokens for c, _, _ in ranges)


def member_class(node: RNode, pos: int, required: frozenset[str]) -> int:
    """A member's class in the fill order within one urgency: SCALAR for an object's scalar,
    REQUIRED for a container the schema requires, OTHER for any other container and for every
    array member."""
    if node.is_list:
        return OTHER
    key = node.member_token(pos)
    value = node.value[key] if node.readable else node.member_at(pos).value
    if not isinstance(value, (dict, list)):
        return SCALAR
    return REQUIRED if key in required else OTHER


def _first_keys(
    node: RNode, depth: int, keyed: Iterable[tuple[tuple[int, int, int], int]]
) -> Iterator[tuple[Key, RNode]]:
    """The members of ``node`` in the order of ``keyed`` (sorted), each once, at its first key."""
    seen: set[int] = set()
    for (urgency, kind, rank), pos in keyed:
        if pos in seen:
            continue
        seen.add(pos)
        yield (urgency, depth, kind, rank), node.member_at(pos)


def _newest_first(urgency: int, start: int, stop: int, count: int) -> Iterator[tuple[tuple[int, int, int], int]]:
    """Array positions ``start`` down to ``stop`` (exclusive), each with its key at ``urgency``."""
    for pos in range(start, stop, -1):
        yield (urgency, OTHER, count - 1 - pos), pos


def _merged_array_order(
    node: RNode, count: int, depth: int, base: int, special: dict[int, int], ranges: list[tuple[int, int]]
) -> Iterator[tuple[Key, RNode]]:
    """best_first for an array with requested ranges: lazy streams (an array may be long), merged."""
    streams: list[Iterator[tuple[tuple[int, int, int], int]]] = [
        iter(sorted(((u, OTHER, count - 1 - p), p) for p, u in special.items())),
    ]
    for start, stop in ranges:
        streams.append(_newest_first(min(IN_RANGE, base), stop - 1, start - 1, count))
    streams.append(_newest_first(base, count - 1, -1, count))
    return _first_keys(node, depth, heapq.merge(*streams))


def _array_order(
    node: RNode, count: int, depth: int, base: int, special: dict[int, int]
) -> Iterator[tuple[Key, RNode]]:
    """best_first for an array with no requested range, the common case, without merging streams.

    Every member has the key ``(base, depth, OTHER, count - 1 - pos)`` (newest first) except the
    special ones, whose urgency is at most ``base``: those strictly more urgent come first, by
    key, and the rest keep their place, exactly the order of the general merge."""
    early = sorted((u, count - 1 - p, p) for p, u in special.items() if u < base)
    for urgency, rank, pos in early:
        yield (urgency, depth, OTHER, rank), node.member_at(pos)
    skip = {p for _, _, p in early}
    for pos in range(count - 1, -1, -1):
        if pos not in skip:
            yield (base, depth, OTHER, count - 1 - pos), node.member_at(pos)
