"""The state paths a CEL expression names: ``state.claims[0].status`` is ``("claims", "0", "status")``.

Used when a blueprint is accepted (never on the step path) to check every ``state.x`` (and
``root.x``, ``self.x``) reference against the state schema, so a misspelt field is a blueprint
issue instead of a rule that never fires. It reuses the budget estimator's small CEL parse
(``celcost``); an expression that parse does not understand names no path (nothing is checked,
nothing is refused: the CEL library already compiled it).
"""

from __future__ import annotations

from collections.abc import Collection

from .celcost import COMPREHENSIONS, _Node, _Parser, _Unparsed

__all__ = ["member_paths"]

ANY_MEMBER = "*"
"""The token for an index the expression computes (``state.items[i]``): any member."""


def _index_token(node: _Node) -> str:
    """A literal index (``[0]``, ``["key"]``) as its token; anything computed is ``*``."""
    if node.kind == "lit":
        text = node.name
        if text[:1] in ("'", '"') and text[-1:] == text[:1] and len(text) >= 2:
            return text[1:-1]
        if text.isdigit():
            return text
    return ANY_MEMBER


def _chain(node: _Node, variables: Collection[str]) -> tuple[str, tuple[str, ...]] | None:
    """(variable, tokens) when ``node`` is a member chain rooted at one of ``variables``."""
    tokens: list[str] = []
    while True:
        if node.kind == "select" and node.target is not None:
            tokens.append(node.name)
            node = node.target
        elif node.kind == "index" and node.target is not None:
            tokens.append(_index_token(node.args[0]))
            node = node.target
        elif node.kind == "ident" and node.name in variables:
            return node.name, tuple(reversed(tokens))
        else:
            return None


def member_paths(source: str, variables: Collection[str]) -> list[tuple[str, tuple[str, ...]]]:
    """Every maximal member chain ``source`` reads from ``variables``, as (variable, tokens), in
    order of appearance; [] when the expression uses syntax the parse does not model.

    A comprehension variable that shadows one of ``variables`` hides it inside that comprehension.
    """
    try:
        tree = _Parser(source).parse()
    except _Unparsed:
        return []
    found: list[tuple[str, tuple[str, ...]]] = []

    def visit(node: _Node, names: frozenset[str]) -> None:
        chain = _chain(node, names)
        if chain is not None:
            found.append(chain)
            inner: _Node | None = node
            while inner is not None and inner.kind in ("select", "index"):
                for arg in inner.args:
                    visit(arg, names)
                inner = inner.target
            return
        if node.target is not None:
            visit(node.target, names)
        args = node.args
        if node.kind == "call" and node.name in COMPREHENSIONS and node.target is not None and args:
            bound = args[0].name if args[0].kind == "ident" else ""
            names = names - {bound}
            args = args[1:]
        for arg in args:
            visit(arg, names)

    visit(tree, frozenset(variables))
    return found
