"""Random board states and JSON Patch ops for the view tests (``test_views_cache``, and
``test_views_golden`` when it draws its corpus): a long array ``/a`` of id'd entries, a map ``/b``, any value ``/c`` and
an array of small containers ``/d``; each test chooses the sizes it needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from slateboard.kernel.canonical import JSON
from slateboard.kernel.pointer import Tokens, format_pointer


def nodes(value: JSON, tokens: Tokens = ()) -> list[tuple[Tokens, JSON]]:
    """Every node of ``value`` with its tokens, the root first."""
    out = [(tokens, value)]
    if isinstance(value, dict):
        for k, v in value.items():
            out += nodes(v, (*tokens, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += nodes(v, (*tokens, str(i)))
    return out


@dataclass
class Boards:
    """Strategies for states and ops; the parameters bound their sizes and alphabets."""

    key_names: tuple[str, ...] = ("id", "t", "x", "y", "0", "é")
    alphabet: str = 'ab\u00e9"\\/\n~'
    text_size: int = 12
    int_max: int = 50
    width: int = 4
    leaves: int = 12
    a_size: tuple[int, int] = (3, 30)
    b_size: int = 4
    focus_a: bool = True
    """Ops favour the long array ``/a`` half of the time."""
    kinds: tuple[str, ...] = ("add", "add", "append", "replace", "remove", "move", "copy")
    keys: Any = field(init=False)
    texts: Any = field(init=False)
    scalars: Any = field(init=False)
    ids: Any = field(init=False)
    values: Any = field(init=False)
    entries: Any = field(init=False)
    initial: Any = field(init=False)

    def __post_init__(self) -> None:
        self.keys = st.sampled_from(list(self.key_names))
        self.texts = st.text(alphabet=self.alphabet, max_size=self.text_size)
        self.scalars = st.none() | st.booleans() | st.integers(-5, self.int_max) | self.texts
        self.ids = st.one_of(
            st.integers(0, 99), st.integers(0, 99).map(lambda i: f"i{i}"), st.sampled_from([None, "", True])
        )
        w = self.width
        self.values = st.recursive(
            self.scalars,
            lambda inner: (
                st.lists(inner, max_size=w)
                | st.dictionaries(self.keys, inner, max_size=w)
                | st.builds(
                    lambda i, t, rest: {**rest, "id": i, "t": t},
                    self.ids,
                    self.texts,
                    st.dictionaries(self.keys, inner, max_size=2),
                )
            ),
            max_leaves=self.leaves,
        )
        self.entries = st.builds(lambda i, t: {"id": i, "t": t}, self.ids, self.texts) | self.values
        small = st.lists(self.scalars, max_size=3) | st.dictionaries(self.keys, self.scalars, max_size=3)
        self.initial = st.fixed_dictionaries(
            {
                "a": st.lists(self.entries, min_size=self.a_size[0], max_size=self.a_size[1]),
                "b": st.dictionaries(self.keys, self.values, max_size=self.b_size),
                "c": self.values,
                "d": st.lists(small, max_size=12),
            }
        )

    def op(self, data: st.DataObject, state: JSON) -> dict[str, JSON]:
        """One random op on ``state``: add, append, replace, remove, move or copy."""
        found = nodes(state)
        in_a = [(t, v) for t, v in found if t[:1] == ("a",)]
        if self.focus_a and data.draw(st.booleans()) and any(isinstance(v, (dict, list)) for _, v in in_a):
            found = in_a  # most of the action is in the long array /a
        inner = [t for t, _ in found if t]
        containers = [(t, v) for t, v in found if isinstance(v, (dict, list))]
        kind = data.draw(st.sampled_from(list(self.kinds)))
        if kind in ("add", "append", "move", "copy") or not inner:
            where, parent = data.draw(st.sampled_from(containers))
            if isinstance(parent, list):
                last = "-" if kind == "append" else str(data.draw(st.integers(0, len(parent))))
                path = format_pointer((*where, last))
            else:
                path = format_pointer((*where, data.draw(self.keys)))
            if kind in ("move", "copy") and inner:
                return {"op": kind, "from": format_pointer(data.draw(st.sampled_from(inner))), "path": path}
            return {"op": "add", "path": path, "value": data.draw(self.entries)}
        target = format_pointer(data.draw(st.sampled_from(inner)))
        if kind == "remove":
            return {"op": "remove", "path": target}
        return {
            "op": "replace",
            "path": target,
            "value": data.draw(self.ids if target.endswith("/id") else self.entries),
        }
