"""A deterministic evaluation budget for CEL: estimate the work before evaluating.

The Rust CEL library has no step limit and cannot be interrupted, and a wall-clock timeout
would make a decision depend on the machine (a replay on a slower one could reject what the
original run accepted). So the cost is estimated from the expression's structure and the
actual sizes of the values it will range over, before it runs, and an expression whose
estimate is over the budget is not evaluated at all. The same expression over the same state
always gets the same estimate, so a decision replays from the log.

What is counted ("steps"): one per comprehension iteration (``all``, ``exists``,
``exists_one``, ``map``, ``filter``) times the work of its body, and one per element a list
membership test (``x in list``) may scan, plus, for each function call or comparison, one per
``TEXT_BYTES_PER_STEP`` bytes of the strings it reads from the variables (so a ``contains`` over a
long string inside a loop costs its length at every iteration; issue 29, R8). A comprehension's range is resolved in the real
values when it is a path (``self.items``, ``root.a.b``, ``x.children`` for an outer
comprehension's variable, or ``.filter``/``.map`` of one), and the cost of a body is the
largest it can be for any element, so for such ranges the estimate is an upper bound. A range
that cannot be resolved (a function result, a literal, a list built inside the expression) is
assumed as large as the largest collection in the expression's variables or literals (a
concatenation: the sum of its parts); a list the expression builds by concatenating inside a
loop can exceed that by a factor bounded by the expression's length. Work that does not loop
(arithmetic, a string function, a list concatenation) is bounded by the expression's length
and the values' sizes, and is not counted.

The estimate is computed from a small parse of the expression. When that parse does not
understand an expression the CEL library accepted, the estimate falls back to the largest
collection size raised to the comprehension nesting depth, which is never smaller.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import SlateboardError

COMPREHENSIONS: frozenset[str] = frozenset({"all", "exists", "exists_one", "map", "filter"})
TEXT_BYTES_PER_STEP = 256
"""Bytes of string a function or comparison reads that count as one step (issue 29, R8): a
``contains`` over a 900 KB string inside three nested loops over 60 items is 216,000
iterations of ~3,600 steps each, not 216,000 steps."""
_TEXT_OPS = frozenset({"==", "!=", "<", "<=", ">", ">=", "+"})
_MAX_ELEMENTS = 1 << 16
"""Past this many candidate values for a comprehension variable the estimator stops tracking
them and treats the variable's fields as unknown (bounded estimator time, larger estimate)."""

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|//[^\n]*)
    | (?P<str>(?:[rR][bB]?|[bB][rR]?)?(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))
    | (?P<num>0[xX][0-9a-fA-F]+[uU]?|\d*\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+[uU]?)
    | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op>==|!=|<=|>=|&&|\|\||\.\?|\[\?|[-+*/%!<>?:.,()\[\]{}])
    """,
    re.VERBOSE,
)
_RELOPS = frozenset({"==", "!=", "<", "<=", ">", ">=", "in"})


class _Unparsed(SlateboardError):
    """The expression uses syntax this estimator does not model (the fallback applies); never
    escapes this module."""


@dataclass(frozen=True, slots=True)
class _Node:
    kind: str  # ident, select, index, call, list, map, lit, op
    name: str = ""
    args: tuple[_Node, ...] = ()
    target: _Node | None = None
    value: Any = None


class _Parser:
    """Recursive descent over the CEL grammar (cel-spec), enough to find loops and paths."""

    def __init__(self, source: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(source):
            m = _TOKEN.match(source, pos)
            if m is None:
                raise _Unparsed(f"unexpected character at {pos}")
            pos = m.end()
            kind = m.lastgroup or ""
            if kind != "ws":
                self.tokens.append((kind, m.group()))
        self.i = 0

    def peek(self) -> str:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else ""

    def take(self, text: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.tokens) or (text is not None and self.tokens[self.i][1] != text):
            raise _Unparsed(f"expected {text!r}")
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def parse(self) -> _Node:
        node = self.expr()
        if self.i != len(self.tokens):
            raise _Unparsed("trailing tokens")
        return node

    def expr(self) -> _Node:
        cond = self.binary(0)
        if self.peek() == "?":
            self.take("?")
            yes = self.binary(0)
            self.take(":")
            return _Node("op", "?:", (cond, yes, self.expr()))
        return cond

    _LEVELS: tuple[frozenset[str], ...] = (
        frozenset({"||"}),
        frozenset({"&&"}),
        _RELOPS,
        frozenset({"+", "-"}),
        frozenset({"*", "/", "%"}),
    )

    def binary(self, level: int) -> _Node:
        if level == len(self._LEVELS):
            return self.unary()
        node = self.binary(level + 1)
        while self.peek() in self._LEVELS[level]:
            op = self.take()[1]
            node = _Node("op", op, (node, self.binary(level + 1)))
        return node

    def unary(self) -> _Node:
        if self.peek() in ("!", "-"):
            op = self.take()[1]
            return _Node("op", op, (self.unary(),))
        return self.member()

    def member(self) -> _Node:
        node = self.primary()
        while True:
            tok = self.peek()
            if tok in (".", ".?"):
                self.take()
                name = self.take()[1]
                if self.peek() == "(":
                    node = _Node("call", name, self.items("(", ")"), node)
                else:
                    node = _Node("select", name, (), node)
            elif tok in ("[", "[?"):
                self.take()
                index = self.expr()
                self.take("]")
                node = _Node("index", "", (index,), node)
            else:
                return node

    def items(self, open_: str, close: str) -> tuple[_Node, ...]:
        """The comma-separated expressions between ``open_`` and ``close`` (a trailing comma allowed)."""
        self.take(open_)
        parts: list[_Node] = []
        while self.peek() != close:
            parts.append(self.expr())
            if self.peek() != close:
                self.take(",")
        self.take(close)
        return tuple(parts)

    def primary(self) -> _Node:
        kind, text = self.take()
        if kind == "op" and text == ".":  # a leading dot: a fully qualified name
            kind, text = self.take()
        if kind == "ident":
            if text in ("true", "false", "null"):
                return _Node("lit", text)
            if self.peek() == "(":
                return _Node("call", text, self.items("(", ")"))
            if self.peek() == "{":  # a message literal: Name{field: value}
                return _Node("map", text, self.inits("}"))
            return _Node("ident", text)
        if kind in ("str", "num"):
            return _Node("lit", text)
        if text == "(":
            node = self.expr()
            self.take(")")
            return node
        if text == "[":
            self.i -= 1
            return _Node("list", "", self.items("[", "]"))
        if text == "{":
            self.i -= 1
            return _Node("map", "", self.inits("}"))
        raise _Unparsed(f"unexpected {text!r}")

    def inits(self, close: str) -> tuple[_Node, ...]:
        self.take("{")
        parts: list[_Node] = []
        while self.peek() != close:
            if self.peek() == "?":
                self.take("?")
            parts.append(self.expr())
            self.take(":")
            parts.append(self.expr())
            if self.peek() != close:
                self.take(",")
        self.take(close)
        return tuple(parts)


@dataclass(frozen=True, slots=True)
class _Shape:
    """What is known of a value: its candidate concrete values, or only a bound on its length."""

    values: tuple[Any, ...] | None = None
    length: int = 0

    def size(self) -> int:
        """The largest collection among the candidates (or the bound when unknown)."""
        if self.values is None:
            return self.length
        return max((len(v) for v in self.values if isinstance(v, list | dict)), default=0)


def deep_collection_max(value: Any) -> int:
    """The longest list or object anywhere inside ``value`` (iterative: states may be deep)."""
    best = 0
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            best = max(best, len(v))
            stack.extend(v.values())
        elif isinstance(v, list | tuple):
            best = max(best, len(v))
            stack.extend(v)
    return best


@dataclass
class _Estimate:
    variables: Mapping[str, Any]
    literal_max: int
    deep_max: Callable[[str], int]
    _unknown: int | None = field(default=None)
    _string_max: int | None = field(default=None)

    def string_max(self) -> int:
        """The longest string anywhere in the variables (what an unresolved operand may be)."""
        if self._string_max is None:
            best, stack = 0, list(self.variables.values())
            while stack:
                v = stack.pop()
                if isinstance(v, str):
                    best = max(best, len(v))
                elif isinstance(v, dict):
                    stack.extend(v.values())
                    stack.extend(k for k in v if isinstance(k, str))
                elif isinstance(v, list | tuple):
                    stack.extend(v)
            self._string_max = best
        return self._string_max

    def text(self, node: _Node, env: Mapping[str, _Shape]) -> int:
        """An upper bound on the string length of ``node``'s value (0 for what is no string read
        from the variables: literals, numbers, results of calls, which are counted where made)."""
        if node.kind in ("ident", "select", "index"):
            if node.kind == "ident" and node.name not in env and node.name not in self.variables:
                return 0
            shape = self.shape(node, env)
            if shape.values is None:
                return self.string_max()
            return max((len(v) for v in shape.values if isinstance(v, str)), default=0)
        if node.kind == "op" and node.name == "+" and len(node.args) == 2:
            return self.text(node.args[0], env) + self.text(node.args[1], env)
        return 0

    def unknown(self) -> int:
        """The size assumed for a collection that cannot be resolved."""
        if self._unknown is None:
            self._unknown = max([self.literal_max, 1, *(self.deep_max(name) for name in self.variables)])
        return self._unknown

    def opaque(self) -> _Shape:
        return _Shape(None, self.unknown())

    def shape(self, node: _Node, env: Mapping[str, _Shape]) -> _Shape:
        if node.kind == "ident":
            if node.name in env:
                return env[node.name]
            if node.name in self.variables:
                return _Shape((self.variables[node.name],))
            return self.opaque()
        if node.kind == "select" and node.target is not None:
            base = self.shape(node.target, env)
            if base.values is None:
                return self.opaque()
            return _Shape(tuple(v[node.name] for v in base.values if isinstance(v, dict) and node.name in v))
        if node.kind == "index" and node.target is not None:
            base = self.shape(node.target, env)
            if base.values is None:
                return self.opaque()
            # Any member may be the one indexed: the union of all members bounds it.
            out: list[Any] = []
            for v in base.values:
                out.extend(v.values() if isinstance(v, dict) else v if isinstance(v, list) else ())
                if len(out) > _MAX_ELEMENTS:
                    return self.opaque()
            return _Shape(tuple(out))
        if node.kind == "call" and node.target is not None and node.name in ("filter", "map"):
            base = self.shape(node.target, env)
            # filter keeps a subset of the same values; map keeps the length, not the values
            return base if node.name == "filter" else _Shape(None, base.size())
        if node.kind == "list":
            return _Shape(None, len(node.args))
        if node.kind == "op" and node.name == "+":
            left, right = (self.shape(a, env) for a in node.args)
            return _Shape(None, max(left.size() + right.size(), self.unknown()))
        return self.opaque()

    def elements(self, shape: _Shape) -> _Shape:
        """What a comprehension variable ranging over ``shape`` may be bound to."""
        if shape.values is None:
            return self.opaque()
        out: list[Any] = []
        for v in shape.values:
            if isinstance(v, dict):
                out.extend(v.keys())  # CEL comprehensions over a map range over its keys
            elif isinstance(v, list):
                out.extend(v)
            if len(out) > _MAX_ELEMENTS:
                return self.opaque()
        return _Shape(tuple(out))

    def cost(self, node: _Node, env: Mapping[str, _Shape]) -> int:
        if node.kind == "call" and node.target is not None and node.name in COMPREHENSIONS and node.args:
            loop_vars = [node.args[0]]
            if len(node.args) == 3 and node.name not in ("map", "filter") and node.args[1].kind == "ident":
                loop_vars.append(node.args[1])  # two-variable form: all(index_or_key, value, body)
            if any(v.kind != "ident" for v in loop_vars):
                return self._children(node, env)
            rng = self.shape(node.target, env)
            inner = dict(env)
            items = self.elements(rng)
            for v in loop_vars:
                inner[v.name] = items
            if len(loop_vars) == 2 and rng.values is not None:
                inner[loop_vars[1].name] = self.elements(
                    _Shape(tuple(list(v.values()) if isinstance(v, dict) else v for v in rng.values))
                )
            body = sum(self.cost(a, inner) for a in node.args[len(loop_vars) :])
            return self.cost(node.target, env) + rng.size() * (1 + body)
        if node.kind == "op" and node.name == "in":
            haystack = self.shape(node.args[1], env)
            return self._children(node, env) + haystack.size()
        return self._children(node, env)

    def _children(self, node: _Node, env: Mapping[str, _Shape]) -> int:
        total = 1
        if node.target is not None:
            total += self.cost(node.target, env)
        for arg in node.args:
            total += self.cost(arg, env)
        if node.kind == "call" or (node.kind == "op" and node.name in _TEXT_OPS):
            # A function or comparison reads its string operands whole (issue 29, R8).
            operands = (*((node.target,) if node.target is not None else ()), *node.args)
            total += sum(self.text(a, env) for a in operands) // TEXT_BYTES_PER_STEP
        return total


def _literal_max(node: _Node) -> int:
    best = len(node.args) if node.kind in ("list", "map") else 0
    for child in (*node.args, *((node.target,) if node.target is not None else ())):
        best = max(best, _literal_max(child))
    return best


def _value_free(node: _Node) -> bool:
    """True when the estimate of ``node`` cannot depend on the variables' values: no
    comprehension anywhere, and every ``in`` tests membership in a list literal (whose size
    the estimate takes from the expression, not from the values)."""
    if node.kind == "call" and node.name in COMPREHENSIONS and node.target is not None:
        return False
    if node.kind == "op" and node.name == "in" and (len(node.args) != 2 or node.args[1].kind != "list"):
        return False
    return all(_value_free(a) for a in node.args) and (node.target is None or _value_free(node.target))


def _no_variable(name: str) -> int:
    raise AssertionError(f"a value-free estimate read variable {name!r}")


def _loops(node: _Node) -> bool:
    if (node.kind == "call" and node.name in COMPREHENSIONS and node.target is not None) or (
        node.kind == "op" and node.name == "in"
    ):
        return True
    return any(_loops(a) for a in node.args) or (node.target is not None and _loops(node.target))


class CostModel:
    """The loop structure of one CEL expression, to estimate its cost over given variables."""

    def __init__(self, source: str, nesting: int) -> None:
        self.source = source
        self.nesting = nesting
        self.tree: _Node | None
        try:
            self.tree = _Parser(source).parse()
            self.literal_max = _literal_max(self.tree)
            # No comprehension and no membership test: the work is bounded by the expression's
            # length and the values' sizes, and estimating would only add overhead.
            self.loops = _loops(self.tree)
            # An estimate that no value can change (``x in ['a', 'b']``) is computed once here
            # instead of walking the tree at every evaluation; it is the same number.
            self.static: int | None = None
            if self.loops and _value_free(self.tree):
                self.static = _Estimate({}, self.literal_max, _no_variable).cost(self.tree, {})
        except (_Unparsed, RecursionError):
            self.tree = None
            self.literal_max = len(source)
            self.loops = nesting > 0 or " in " in source
            self.static = None

    def estimate(self, variables: Mapping[str, Any], deep_max: Callable[[str], int] | None = None) -> int:
        """Upper estimate of the evaluation steps over ``variables``; ``deep_max(name)`` may
        supply a cached size of the longest collection inside a variable."""
        if not self.loops:
            return 1
        if self.static is not None:
            return self.static
        return self._walk(variables, deep_max)

    def _walk(self, variables: Mapping[str, Any], deep_max: Callable[[str], int] | None = None) -> int:
        """The estimate computed over the tree (what ``estimate`` returns when not static)."""

        def uncached(name: str) -> int:
            return deep_collection_max(variables[name])

        est = _Estimate(variables, self.literal_max, deep_max or uncached)
        if self.tree is not None:
            try:
                return est.cost(self.tree, {})
            except RecursionError:
                pass  # a tree deep enough to exhaust the stack here: use the coarse bound
        return int((est.unknown() + 1) ** max(self.nesting + (" in " in self.source), 1))
