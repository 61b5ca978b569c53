"""Reading blueprint text (YAML or JSON) with budgets: size, alias expansion, nesting, and no
duplicate keys.

A blueprint file is untrusted input. ``yaml.safe_load`` builds no objects of arbitrary types,
but it follows aliases without limit (a 1.5 KB "billion laughs" file expands past gigabytes
once the blueprint is validated or serialised), accepts recursive aliases, recurses on deep
nesting, and resolves a repeated key last-wins (a trailing ``invariants: []`` silently drops
every invariant). ``parse_blueprint_text`` refuses all of these with a one-line reason.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from ..errors import UsageError
from ..kernel.jsonvalue import nesting_depth

__all__ = [
    "MAX_BLUEPRINT_BYTES",
    "MAX_BLUEPRINT_DEPTH",
    "MAX_EXPANDED_BYTES",
    "MAX_EXPANDED_NODES",
    "MAX_INITIAL_STATE_BYTES",
    "BlueprintTextError",
    "parse_blueprint_text",
    "rules_on",
]

MAX_BLUEPRINT_BYTES = 4 << 20
"""Largest blueprint text accepted (4 MiB: schemas, prompts and an initial state fit easily)."""

MAX_EXPANDED_NODES = 200_000
"""Most YAML nodes a blueprint may hold once every alias is expanded."""

MAX_EXPANDED_BYTES = 16 << 20
"""Most bytes of scalar text a blueprint may hold once every alias is expanded (16 MiB): a
1 MB string used a thousand times through aliases is 1000 nodes but 1 GB of text (issue 29, R7)."""

MAX_INITIAL_STATE_BYTES = 16 << 20
"""Largest initial state a blueprint may carry, as canonical JSON (16 MiB); compile_blueprint
reports a larger one as a blueprint issue at /initial_state (issue 29, R7)."""

MAX_BLUEPRINT_DEPTH = 200
"""Deepest nesting of mappings/sequences in a blueprint document."""


class BlueprintTextError(UsageError, ValueError):
    """The text is not an acceptable YAML/JSON document; the message says why, on one line."""


class _BudgetLoader(yaml.SafeLoader):
    """SafeLoader that counts nodes with aliases expanded, refuses recursive aliases and deep
    nesting, and refuses duplicate mapping keys."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._sizes: dict[int, int] = {}  # id(node) -> node count with aliases expanded
        self._bytes: dict[int, int] = {}  # id(node) -> scalar text bytes with aliases expanded
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            target = self.anchors.get(event.anchor)
            if target is not None and id(target) not in self._sizes:
                raise yaml.composer.ComposerError(
                    None, None, f"alias *{event.anchor} refers to a node that contains it", event.start_mark
                )
        self._depth += 1
        if self._depth > MAX_BLUEPRINT_DEPTH:
            raise yaml.composer.ComposerError(
                None,
                None,
                f"nests deeper than {MAX_BLUEPRINT_DEPTH} levels",
                self.peek_event().start_mark,  # type: ignore[no-untyped-call]
            )
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if node is not None and id(node) not in self._sizes:
            sizes, nbytes = self._sizes, self._bytes
            if isinstance(node, yaml.MappingNode):
                size = 1 + sum(sizes.get(id(k), 1) + sizes.get(id(v), 1) for k, v in node.value)
                text = sum(nbytes.get(id(k), 0) + nbytes.get(id(v), 0) for k, v in node.value)
            elif isinstance(node, yaml.SequenceNode):
                size = 1 + sum(sizes.get(id(v), 1) for v in node.value)
                text = sum(nbytes.get(id(v), 0) for v in node.value)
            else:
                size, text = 1, len(str(node.value))
            if text > MAX_EXPANDED_BYTES:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"expands to more than {MAX_EXPANDED_BYTES} bytes of text (aliases counted each time they are used)",
                    node.start_mark,
                )
            nbytes[id(node)] = text
            if size > MAX_EXPANDED_NODES:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"expands to more than {MAX_EXPANDED_NODES} nodes (aliases counted each time they are used)",
                    node.start_mark,
                )
            self._sizes[id(node)] = size
        return node

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # merged keys may be overridden explicitly (YAML merge semantics)
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                except TypeError:
                    continue  # an unhashable key: the base constructor reports it
                if duplicate:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark, f"duplicate key {key!r}", key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise BlueprintTextError(f"not valid JSON: duplicate key {key!r}")
        out[key] = value
    return out


def parse_blueprint_text(text: str, *, json_text: bool = False) -> Any:
    """The document in ``text`` (JSON when ``json_text``, else YAML), within the budgets above.

    Raises BlueprintTextError naming the problem; never RecursionError or MemoryError from a
    hostile document.
    """
    kind = "JSON" if json_text else "YAML"
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BLUEPRINT_BYTES:
        raise BlueprintTextError(f"{size} bytes, over the limit of {MAX_BLUEPRINT_BYTES} for a blueprint")
    if json_text:
        depth = nesting_depth(text)
        if depth > MAX_BLUEPRINT_DEPTH:
            raise BlueprintTextError(f"not valid JSON: nests {depth} levels deep, over {MAX_BLUEPRINT_DEPTH}")
        try:
            return json.loads(text, object_pairs_hook=_unique)
        except BlueprintTextError:
            raise
        except (ValueError, RecursionError) as exc:
            raise BlueprintTextError(f"not valid JSON: {exc}") from None
    try:
        return yaml.load(text, Loader=_BudgetLoader)
    except yaml.YAMLError as exc:
        raise BlueprintTextError(f"not valid {kind}: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise BlueprintTextError(f"not valid {kind}: nests too deeply") from None


def rules_on(data: Any) -> Any:
    """``data`` with each rule's ``True`` key renamed ``on``: YAML 1.1 reads an unquoted ``on:``
    key as the boolean true, and a rule never means that (changes ``data`` in place)."""
    if isinstance(data, dict) and isinstance(data.get("rules"), list):
        for rule in data["rules"]:
            if isinstance(rule, dict) and True in rule and "on" not in rule:
                rule["on"] = rule.pop(True)
    return data
