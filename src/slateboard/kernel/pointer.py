"""JSON Pointers (RFC 6901) and contract patterns.

A pointer is parsed once into a tuple of unescaped tokens. Contract patterns are pointers in
which a token ``*`` matches exactly one segment and ``-`` stands for an array append; a final
``**`` matches the node itself and everything below it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Any, Final

from ..errors import UsageError

Tokens = tuple[str, ...]


class Missing(Enum):
    """The type of ``MISSING``: one member, so ``value is MISSING`` narrows for type checkers."""

    MISSING = "MISSING"

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = Missing.MISSING
"""What ``resolve`` returns for a pointer that names no node (``None`` is a JSON value)."""


class PointerError(UsageError, ValueError):
    """A string that is not a valid JSON Pointer; the message names the pointer and the fault."""


def parse_pointer(pointer: object) -> Tokens:
    """Parse an RFC 6901 pointer into unescaped tokens.

    ``""`` is the whole document. Raises PointerError for a value that is not a string, a
    pointer that does not start with ``/``, or ``~`` not followed by ``0`` or ``1``.
    """
    if not isinstance(pointer, str):
        raise PointerError(f"pointer must be a string, got {type(pointer).__name__}")
    return _parse_pointer(pointer)


@lru_cache(maxsize=65536)
def _parse_pointer(pointer: str) -> Tokens:
    if pointer == "":
        return ()
    if not pointer.startswith("/"):
        raise PointerError(f"pointer {pointer!r} must be empty or start with '/'")
    tokens = pointer[1:].split("/")
    out: list[str] = []
    for token in tokens:
        if "~" in token:
            i = 0
            while True:
                i = token.find("~", i)
                if i < 0:
                    break
                if i + 1 >= len(token) or token[i + 1] not in "01":
                    raise PointerError(
                        f"pointer {pointer!r} has an invalid escape in segment {token!r}: "
                        "'~' must be followed by '0' or '1'"
                    )
                i += 2
            token = token.replace("~1", "/").replace("~0", "~")
        out.append(token)
    return tuple(out)


def escape_token(token: str) -> str:
    """Escape one token for use inside a pointer."""
    return token.replace("~", "~0").replace("/", "~1")


def format_pointer(tokens: Tokens | list[str]) -> str:
    """Render tokens back into a pointer string."""
    return "".join("/" + escape_token(t) for t in tokens)


def is_array_index(token: str) -> bool:
    """True when ``token`` is a valid RFC 6901 array index (no sign, no leading zeros)."""
    return token.isdigit() and token.isascii() and (token == "0" or token[0] != "0")


def resolve(state: Any, pointer: str | Tokens) -> Any:
    """The node of ``state`` at ``pointer`` (a pointer string or parsed tokens), or ``MISSING``.

    Never raises for a well-formed pointer: a member that does not exist, an index that is not a
    canonical array index or is out of range, and a step into a scalar all give ``MISSING``. A
    malformed pointer string raises PointerError. The result is the live node, not a copy.
    """
    tokens = parse_pointer(pointer) if isinstance(pointer, str) else pointer
    node = state
    for t in tokens:
        if isinstance(node, dict):
            if t not in node:
                return MISSING
            node = node[t]
        elif isinstance(node, list):
            if not is_array_index(t) or int(t) >= len(node):
                return MISSING
            node = node[int(t)]
        else:
            return MISSING
    return node


def expand(state: Any, tokens: Tokens, prefix: Tokens = ()) -> Iterator[Tokens]:
    """Concrete paths of existing nodes matching pattern ``tokens`` (``*`` = any member)."""
    if not tokens or tokens == ("**",):
        yield prefix
        return
    head, rest = tokens[0], tokens[1:]
    node = resolve(state, prefix)
    if isinstance(node, dict):
        keys = list(node) if head == "*" else ([head] if head in node else [])
    elif isinstance(node, list):
        if head == "*":
            keys = [str(i) for i in range(len(node))]
        else:
            keys = [head] if is_array_index(head) and int(head) < len(node) else []
    else:
        keys = []
    for k in keys:
        yield from expand(state, rest, (*prefix, k))


@dataclass(frozen=True, slots=True)
class Pattern:
    """A contract pattern: a pointer whose ``*`` tokens match one segment each.

    ``-`` as a token matches an array append (the op path ends in ``-``) and, for patterns that
    are matched against concrete event paths, any array index created by an append.
    A final ``**`` matches the node at that point and every descendant.
    """

    text: str
    tokens: Tokens

    @classmethod
    def parse(cls, text: str) -> Pattern:
        """Parse a pattern; raises PointerError with the pattern in the message."""
        tokens = parse_pointer(text)
        if "**" in tokens[:-1]:
            raise PointerError(f"pattern {text!r}: '**' is only allowed as the last segment")
        return cls(text, tokens)

    @property
    def deep(self) -> bool:
        """True when the pattern ends in ``**`` (covers a whole subtree)."""
        return bool(self.tokens) and self.tokens[-1] == "**"

    def match(self, path: Tokens, *, appended: bool = False) -> tuple[str, ...] | None:
        """Match a concrete path; return the segments bound by ``*`` (and ``-``) or None.

        ``appended`` says the last token of ``path`` came from an append (``-``): only then
        may a pattern ``-`` match it, in addition to a literal ``-`` token in ``path``.
        """
        pt = self.tokens
        if self.deep:
            prefix = pt[:-1]
            if len(path) < len(prefix):
                return None
            return self._match_prefix(prefix, path[: len(prefix)], appended and len(path) == len(prefix))
        if len(pt) != len(path):
            return None
        return self._match_prefix(pt, path, appended)

    @staticmethod
    def _match_prefix(pt: Tokens, path: Tokens, appended_last: bool) -> tuple[str, ...] | None:
        binds: list[str] = []
        last = len(pt) - 1
        for i, (p, s) in enumerate(zip(pt, path, strict=True)):
            if p == "*":
                binds.append(s)
            elif p == "-":
                if s == "-" or (i == last and appended_last):
                    binds.append(s)
                else:
                    return None
            elif p != s:
                return None
        return tuple(binds)

    def covers(self, path: Tokens) -> bool:
        """True when this write pattern authorises an op at the concrete op ``path``.

        The op path may end in ``-`` (append); a pattern token ``-`` only covers that, while
        ``*`` covers any single segment including ``-``.
        """
        return self.match(path) is not None

    def __str__(self) -> str:
        return self.text


def region_contains(p: Pattern, tokens: Tokens) -> bool:
    """True when concrete ``tokens`` is the node a pattern names or lies below it."""
    pt = p.tokens[:-1] if p.deep else p.tokens
    if len(tokens) < len(pt):
        return False
    return all(a == "*" or a == b for a, b in zip(pt, tokens, strict=False))
