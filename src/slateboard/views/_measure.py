"""Exact, bounded character counts of canonical JSON, and clipping with a marker.

Every size here is the number of characters (not bytes) of the canonical JSON rendering used by
``slateboard.kernel.canonical`` (sorted keys, no whitespace, orjson number and string forms), so
the view builder can account for a view's length before rendering it. Measuring is bounded: a
walk stops as soon as the running total passes the caller's limit, so the cost of asking "does
this node fit in ``n`` characters?" is O(min(size of the node, n)).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import orjson

from ..kernel.canonical import JSON, canonical_str


def str_size(s: str) -> int:
    """Characters of ``s`` rendered as a canonical JSON string (quotes and escapes included)."""
    raw = orjson.dumps(s)
    return len(raw) if s.isascii() else len(raw.decode("utf-8"))


def scalar_size(value: JSON) -> int:
    """Characters of a non-container JSON value in canonical form."""
    if value is None or value is True:
        return 4
    if value is False:
        return 5
    if isinstance(value, str):
        return str_size(value)
    return len(orjson.dumps(value))


def json_size(value: JSON) -> int:
    """Exact characters of the canonical JSON of ``value`` (unbounded; for small values)."""
    return len(canonical_str(value))


class Meter:
    """Bounded size measurement with a per-build memo and a total work cap.

    ``size(value, limit)`` returns the exact canonical size when it is at most ``limit``, and some
    number greater than ``limit`` otherwise. The memo is keyed by object identity, which is sound
    for one build because the state is not mutated while a view is built. ``cap`` bounds the
    number of nodes visited over the whole build; past it every further measurement reports
    "does not fit", which keeps the builder's cost bounded on adversarial states while staying
    a deterministic function of its inputs.
    """

    __slots__ = ("cap", "flat", "hints", "memo", "walks", "work")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.work = 0
        self.memo: dict[int, tuple[int, bool]] = {}
        # (nodes, size) of shallow containers measured by _flat_size, by identity like memo: a
        # build measures each entry about three times (root, its collection, itself); a hit
        # still counts the same work, so the work cap trips where it would without it.
        self.flat: dict[int, tuple[int, int]] = {}
        # What _flat_size would answer for a container, by identity, known without scanning it
        # (a ViewCache's facts, views._cache): ``hint(node, room, work_left)`` returns exactly
        # what ``_flat_size(node, room, work_left)`` would, so sizes and work are unchanged.
        # A hint is a callable or a ViewCache's flat facts tuple (read by ``told``).
        self.hints: dict[int, Hint] = {}
        # What _walk would find for a container that _flat_size declines (an array of records
        # with nested lists), when it fits: ``walk(node, limit, work_left, flat)`` returns
        # (size, nodes) and notes the members' flat sizes as the walk would, or None to walk.
        self.walks: dict[int, Callable[[JSON, int, int, dict[int, tuple[int, int]]], tuple[int, int] | None]] = {}

    @property
    def exhausted(self) -> bool:
        """True once the work cap has been spent."""
        return self.work > self.cap

    def size(self, value: JSON, limit: int) -> int:
        """Exact size if ``<= limit``, else a number ``> limit`` (see class docstring)."""
        if limit < 1:
            return 1  # every JSON value takes at least one character
        key = id(value)
        hit = self.memo.get(key)
        if hit is not None:
            total, exact = hit
            if exact or total > limit:
                return total
        if self.hints and (type(value) is dict or type(value) is list):
            # What the walk does with a container whose flat size is known, without walking.
            flat = self.flat.get(key)
            if flat is None or flat[0] > self.cap - self.work:
                hint = self.hints.get(key)
                flat = _hinted(hint, value, limit, self.cap - self.work) if hint is not None else None
                if flat is not None:
                    self.flat[key] = flat
            if flat is not None:
                self.work += flat[0]
                total = flat[1]
                if not self.exhausted:
                    self.memo[key] = (total, total <= limit)
                return total
            walk = self.walks.get(key)
            walked = walk(value, limit, self.cap - self.work, self.flat) if walk is not None else None
            if walked is not None:  # exact, within the cap
                total, nodes = walked
                self.work += nodes
                self.memo[key] = (total, True)
                return total
        total, exact = self._walk(value, limit)
        if not self.exhausted and (exact or total > limit):
            self.memo[key] = (total, exact)
        return total

    def _walk(self, value: JSON, limit: int) -> tuple[int, bool]:
        total = 0
        stack: list[JSON] = [value]
        while stack:
            node = stack.pop()
            if type(node) is dict or type(node) is list:
                flat = self.flat.get(id(node))
                if flat is None or flat[0] > self.cap - self.work:
                    hint = self.hints.get(id(node)) if self.hints else None
                    if hint is None:
                        flat = _flat_size(node, limit - total, self.cap - self.work)
                    else:
                        flat = _hinted(hint, node, limit - total, self.cap - self.work)
                    if flat is not None:
                        self.flat[id(node)] = flat
                if flat is not None:
                    nodes, size = flat
                    self.work += nodes
                    total += size
                    if total > limit:
                        return total, False
                    continue
            self.work += 1
            if self.work > self.cap:
                return limit + 1, False
            if isinstance(node, dict):
                n = len(node)
                total += 2 + (n - 1 if n else 0)
                if total + 4 * n > limit:  # each member is at least `"":0`
                    return max(total + 4 * n, limit + 1), False
                for k, child in node.items():
                    total += str_size(k) + 1
                    stack.append(child)
                    if total > limit:
                        return total, False
            elif isinstance(node, list):
                n = len(node)
                total += 2 + (n - 1 if n else 0)
                if total + n > limit:
                    return max(total + n, limit + 1), False
                stack.extend(node)
            elif isinstance(node, str):
                if total + len(node) + 2 > limit:
                    return total + len(node) + 2, False
                total += str_size(node)
            else:
                total += scalar_size(node)
            if total > limit:
                return total, False
        return total, True


_SCALARS = (str, int, float, bool, type(None))

NEVER = (0, 0, 0, -1)
"""Facts (``views._cache.Facts``) of a value ``_flat_size`` never measures."""
OVER = -2
"""The depth of facts ``(0, bound, 0, OVER)``: a value over ``bound`` on its strings and nodes alone."""

Hint = Callable[[JSON, int, int], "tuple[int, int] | None"] | tuple[int, int, int, int]
"""What a meter is told of a container: a callable, or flat facts (``told``)."""


def told(facts: tuple[int, int, int, int], node: JSON, room: int, work_left: int) -> tuple[int, int] | None:
    """What ``_flat_size(node, room, work_left)`` answers, from ``node``'s facts
    ``(nodes, size, chars, depth)`` (``views._cache.Facts``)."""
    nodes, size, chars, depth = facts
    if depth >= 0:
        # _flat_size checks after each member, and its sums only grow, so the final sums decide;
        # an empty container passes unchecked.
        if nodes > 1 and (chars + nodes > room or nodes > work_left):
            return None
        return nodes, size
    if depth == OVER and room > size:  # size: the bound the facts were measured to
        assert type(node) is dict or type(node) is list
        return _flat_size(node, room, work_left)
    return None


def _hinted(hint: Hint, node: JSON, room: int, work_left: int) -> tuple[int, int] | None:
    if type(hint) is tuple:
        return told(hint, node, room, work_left)
    assert not isinstance(hint, tuple)
    return hint(node, room, work_left)


def _flat_size(node: dict[str, JSON] | list[JSON], room: int, work_left: int) -> tuple[int, int] | None:
    """(nodes, exact canonical size) of a small shallow container, or None to walk it instead.

    A fast path for the common board entry (a record of scalars, perhaps with a list of
    scalars): one orjson call instead of a Python step per node, about 40x cheaper. It applies
    only when the container is at most two levels deep, its strings' lengths plus its node count
    (a lower bound of its size) are at most ``room`` (so scanning and encoding cost O(room),
    keeping measuring bounded; a node over it is left to the walk, which rejects it early) and
    its node count fits the meter's remaining work (so the work cap trips exactly where the
    walk would trip). The node count is what the walk would have counted, one per value. The
    size equals the walk's: canonical JSON is orjson with sorted keys, and sorting does not
    change the length.
    """
    nodes = 1
    chars = 0
    for child in node.values() if type(node) is dict else node:
        nodes += 1
        kind = type(child)
        if kind is str:
            chars += len(child)
        elif kind is dict or kind is list:
            for leaf in child.values() if kind is dict else child:  # type: ignore[union-attr]
                nodes += 1
                if type(leaf) is str:
                    chars += len(leaf)
                elif type(leaf) not in _SCALARS:
                    return None
                if chars + nodes > room:
                    return None
        elif kind not in _SCALARS:
            return None
        # Every node takes at least one character beyond its strings' lengths, so past this the
        # container cannot fit the room: stop here, which keeps this loop O(room) on long lists.
        if chars + nodes > room or nodes > work_left:
            return None
    try:
        raw = orjson.dumps(node)
    except TypeError:  # a non-string key or an out-of-range integer: let the walk decide
        return None
    return nodes, len(raw) if raw.isascii() else len(raw.decode("utf-8"))


def _chunks(value: JSON, cut: int) -> Iterator[str]:
    """Canonical JSON text of ``value`` in pieces; strings longer than ``cut`` are cut short."""
    if isinstance(value, dict):
        yield "{"
        for i, key in enumerate(sorted(value)):
            if i:
                yield ","
            yield orjson.dumps(key).decode("utf-8")
            yield ":"
            yield from _chunks(value[key], cut)
        yield "}"
    elif isinstance(value, list):
        yield "["
        for i, item in enumerate(value):
            if i:
                yield ","
            yield from _chunks(item, cut)
        yield "]"
    elif isinstance(value, str) and len(value) > cut:
        yield orjson.dumps(value[:cut]).decode("utf-8")[:-1]
    else:
        yield orjson.dumps(value).decode("utf-8")


def canonical_prefix(value: JSON, n: int) -> tuple[str, bool]:
    """The first ``n`` characters of the canonical JSON of ``value`` and whether it was longer.

    Costs O(n + keys sorted on the way), never O(size of value).
    """
    out: list[str] = []
    length = 0
    for piece in _chunks(value, n + 1):
        out.append(piece)
        length += len(piece)
        if length > n:
            return "".join(out)[:n], True
    return "".join(out), False


ELLIPSIS = "…"


def shorten(text: str, n: int) -> str:
    """``text`` itself when at most ``n`` characters, else its first ``n - 1`` and an ellipsis."""
    if len(text) <= n:
        return text
    return text[: max(n - 1, 0)] + ELLIPSIS


def clip_str(text: str, limit: int) -> str | None:
    """``text``, or a marked prefix of it, whose canonical JSON string form fits ``limit``.

    The marker ``…[+N chars]`` says how much was cut. Returns None when not even the marker fits.
    """
    if str_size(text) <= limit:
        return text
    lo, hi = 0, min(len(text), limit)
    best: str | None = None
    while lo <= hi:
        mid = (lo + hi) // 2
        cand = text[:mid] + f"{ELLIPSIS}[+{len(text) - mid} chars]"
        if str_size(cand) <= limit:
            best = cand
            lo = mid + 1
        else:
            hi = mid - 1
    return best


def clip_json(value: JSON, limit: int) -> JSON | None:
    """``value`` when its canonical form fits ``limit``; else a marked prefix of its canonical
    text as a string (see clip_str); None when nothing fits."""
    if isinstance(value, str):
        return clip_str(value, limit)
    if isinstance(value, (dict, list)):
        text = canonical_str(value)
        return value if len(text) <= limit else clip_str(text, limit)
    return value if scalar_size(value) <= limit else None
