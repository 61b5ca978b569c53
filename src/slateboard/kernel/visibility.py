"""Visibility on entries (issue 44): the producer of an entry says which workers may see it.

A blueprint names *collections with visibility*: objects keyed by entry id (``/notes``) whose
members (the entries) may carry a visibility field (``visible_to: [worker names or labels]``,
``"*"`` for every worker). An entry without the field is visible to every worker. A worker sees
an entry when one of the names in its field is the worker itself, a label the worker belongs
to, or ``"*"``; a field that is not a list of strings shows the entry to nobody (fail closed).

What the kernel and the view builder guarantee, for a worker W and an entry E hidden from W:

* **As if absent.** W's view is the view of the state without E (``Visibility.cut``), so no
  data, summary, handle, count, expansion or event shows E. An op of W that names E or a node
  below it (``test`` included, and the ``from`` of ``move``/``copy``) is answered with the stage
  and reason the kernel gives when E does not exist (``absent_answer``); the one exception is an
  op that *creates* an entry at E's key: it is refused as taken (a worker learns that a key it
  chose is in use, nothing of the entry). A change to E does not make W's proposals stale, and a
  rejection reason never names E's path.
* **Whole collections are not named.** No op names a collection or an ancestor of it (a ``test``
  would compare the hidden entries, a ``copy`` would copy them, a ``replace`` would drop them):
  entries are written one by one (``names_collection``, the ``authorise`` stage, the same answer
  for every worker and every state).
* **Within the contract.** When W creates an entry or changes its visibility field, the audience
  the field names must lie within what W's contract may address (``WorkerSpec.addresses``, and
  W itself); a field left off reaches everyone, and a collection may require the field. Anything
  wider is rejected at stage ``authorise`` naming the name it may not use (``widening``).

Everything here is a function of the blueprint and the state, so replay reproduces every
decision, and a view's hash changes exactly when what W may see changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from .canonical import JSON
from .patch import Applied, ApplyError, Effect, Op, apply_ops
from .pointer import Tokens, format_pointer
from .record import Stage

__all__ = ["EVERYONE", "Visibility", "VisibleCollection", "absent_answer", "names_collection", "widening"]

EVERYONE = "*"
"""The name that, in a visibility field or a contract's ``addresses``, stands for every worker."""

Answer = tuple[Stage, str]
"""A rejection: (stage, reason)."""


@dataclass(frozen=True, slots=True)
class VisibleCollection:
    """One collection with visibility: its concrete ``tokens`` (an object reached through object
    members only), the entry ``field`` that carries the audience, and whether it is ``required``."""

    tokens: Tokens
    field: str = "visible_to"
    required: bool = False

    @property
    def path(self) -> str:
        """The collection's pointer."""
        return format_pointer(self.tokens)


class Visibility:
    """The compiled visibility terms of a blueprint (see the module docstring).

    ``labels`` maps a label to its workers; ``addresses`` maps a worker to the names (workers,
    labels, ``"*"``) its contract lets it put in a visibility field, or None for any name.
    """

    __slots__ = ("_admits", "_reach", "addresses", "collections", "labels", "workers")

    def __init__(
        self,
        collections: Iterable[VisibleCollection],
        labels: Mapping[str, Iterable[str]],
        workers: Iterable[str],
        addresses: Mapping[str, Iterable[str] | None],
    ) -> None:
        self.collections = tuple(collections)
        self.workers = frozenset(workers)
        self.labels = {name: frozenset(members) for name, members in labels.items()}
        self.addresses = {w: None if names is None else frozenset(names) for w, names in addresses.items()}
        # The names that admit a worker: itself, its labels and "*" (a set lookup per entry).
        self._admits: dict[str, frozenset[str]] = {
            w: frozenset({w, EVERYONE, *(label for label, members in self.labels.items() if w in members)})
            for w in self.workers
        }
        self._reach: dict[str, frozenset[str] | None] = {w: self._reach_of(w) for w in self.workers}

    # -- who sees what ---------------------------------------------------------------------
    def audience(self, name: str) -> frozenset[str]:
        """The workers a name in a visibility field stands for (empty for an unknown name)."""
        if name == EVERYONE:
            return self.workers
        if name in self.labels:
            return self.labels[name]
        return frozenset({name}) & self.workers

    def sees(self, worker: str, entry: JSON, coll: VisibleCollection) -> bool:
        """True when ``worker`` may see ``entry`` (a member of ``coll``)."""
        if not isinstance(entry, dict) or coll.field not in entry:
            return True
        names = entry[coll.field]
        if not isinstance(names, list):
            return False
        admits = self._admits.get(worker, frozenset({EVERYONE}))
        return any(isinstance(n, str) and n in admits for n in names)

    def entry_of(self, tokens: Tokens) -> tuple[VisibleCollection, Tokens] | None:
        """The collection and the entry's tokens when ``tokens`` is an entry or lies below one."""
        for coll in self.collections:
            n = len(coll.tokens)
            if len(tokens) > n and tokens[:n] == coll.tokens:
                return coll, tokens[: n + 1]
        return None

    def hidden(self, state: JSON, worker: str, tokens: Tokens) -> bool:
        """True when ``tokens`` is, or lies below, an existing entry hidden from ``worker``."""
        found = self.entry_of(tokens)
        if found is None:
            return False
        coll, entry_tokens = found
        members = _at(state, coll.tokens)
        if not isinstance(members, dict) or entry_tokens[-1] not in members:
            return False
        return not self.sees(worker, members[entry_tokens[-1]], coll)

    def shown(self, state: JSON, worker: str, tokens: Tokens) -> bool:
        """True when ``tokens`` lies outside every entry, or inside one that exists and that
        ``worker`` sees (so a removed entry counts as not shown: whose it was is not known)."""
        found = self.entry_of(tokens)
        if found is None:
            return True
        coll, entry_tokens = found
        members = _at(state, coll.tokens)
        if not isinstance(members, dict) or entry_tokens[-1] not in members:
            return False
        return self.sees(worker, members[entry_tokens[-1]], coll)

    def cut(self, state: JSON, worker: str) -> JSON:
        """``state`` without the entries hidden from ``worker``: copies only the collections it
        cuts from and their ancestors (the rest is shared); a state with nothing hidden is
        returned as is, and cutting a cut state changes nothing."""
        return self.without(state, self.hidden_entries(state, worker))

    def hidden_entries(self, state: JSON, worker: str) -> list[Tokens]:
        """The tokens of every entry of ``state`` hidden from ``worker`` (one pass per collection)."""
        out: list[Tokens] = []
        for coll in self.collections:
            members = _at(state, coll.tokens)
            if isinstance(members, dict):
                out.extend((*coll.tokens, k) for k, v in members.items() if not self.sees(worker, v, coll))
        return out

    @staticmethod
    def without(state: JSON, entries: list[Tokens]) -> JSON:
        """``state`` without the given entries (copying only the collections they are in and
        the objects above them); ``state`` itself when there are none."""
        by_collection: dict[Tokens, set[str]] = {}
        for tokens in entries:
            by_collection.setdefault(tokens[:-1], set()).add(tokens[-1])
        for coll_tokens, keys in by_collection.items():
            members = _at(state, coll_tokens)
            if isinstance(members, dict) and keys & members.keys():
                state = _replaced(state, coll_tokens, {k: v for k, v in members.items() if k not in keys})
        return state

    # -- what a worker may address -----------------------------------------------------------
    def _reach_of(self, worker: str) -> frozenset[str] | None:
        names = self.addresses.get(worker)
        if names is None:
            return None
        out: set[str] = {worker}
        for name in names:
            out |= self.audience(name)
        return frozenset(out)

    def beyond(self, worker: str, names: list[str]) -> str | None:
        """The first name of ``names`` whose audience lies outside what ``worker`` may address."""
        reach = self._reach.get(worker, frozenset())
        if reach is None:
            return None
        return next((n for n in names if not self.audience(n) <= reach), None)


def names_collection(vis: Visibility, ops: list[Op]) -> Answer | None:
    """The ``authorise`` refusal of the first op that names a collection with visibility or an
    ancestor of one (as ``path`` or ``from``), or None. It depends on the op alone."""
    for op in ops:
        for tokens, label in ((op.tokens, op.path), (op.from_tokens, op.from_path)):
            if tokens is None:
                continue
            for coll in vis.collections:
                if coll.tokens[: len(tokens)] == tokens:
                    what = "the collection" if len(tokens) == len(coll.tokens) else "an ancestor of the collection"
                    return "authorise", (
                        f"op {op.index} ({op.op} {label!r}): {label!r} is {what} {coll.path!r}, whose entries "
                        "have visibility: name its entries one by one"
                    )
    return None


def absent_answer(
    vis: Visibility, state: JSON, ops: list[Op], worker: str, observer: Callable[[Applied, list[Effect]], None]
) -> Answer | None:
    """When an op of ``worker`` names an entry hidden from it: the (stage, reason) the kernel
    would give if that entry did not exist (the ops before it are applied, observed, and undone;
    ``state`` is left exactly as it was). An op that would create an entry at a hidden entry's
    key is refused as taken. None when no op names a hidden entry."""
    first = next(
        (
            i
            for i, op in enumerate(ops)
            if vis.hidden(state, worker, op.tokens)
            or (op.from_tokens is not None and vis.hidden(state, worker, op.from_tokens))
        ),
        None,
    )
    if first is None:
        return None
    hidden = vis.hidden_entries(state, worker)
    try:
        before = apply_ops(state, ops[:first], observer)
    except ApplyError as exc:
        return exc.stage, str(exc)
    try:
        # The entries hidden before the patch, as the absent world never had them.
        probe = apply_ops(vis.without(before.root, hidden), [ops[first]])
        probe.undo()
    except ApplyError as exc:
        return exc.stage, str(exc)
    finally:
        before.undo()
    op = ops[first]
    return "apply", f"op {op.index} ({op.op} {op.path!r}): the key {op.path!r} is taken; choose another"


def widening(vis: Visibility, state: JSON, effects: list[Effect], worker: str) -> Answer | None:
    """The ``authorise`` refusal when ``worker``'s applied patch (``effects`` over the new
    ``state``) created an entry, or changed an entry's visibility field, to an audience wider
    than its contract allows: a malformed field, a name it may not address, or no field where
    the collection requires one. None when every such entry is within its contract."""
    seen: set[Tokens] = set()
    for eff in effects:
        found = vis.entry_of(eff.path)
        if found is None:
            continue
        coll, entry_tokens = found
        depth = len(entry_tokens)
        if eff.kind == "delete" and len(eff.path) == depth:
            continue  # the entry is gone (removing its field, or part of it, is a change of it)
        if entry_tokens in seen or (len(eff.path) > depth and eff.path[depth] != coll.field):
            continue
        seen.add(entry_tokens)
        entry = _at(state, entry_tokens)
        where = format_pointer(entry_tokens)
        if not isinstance(entry, dict):
            continue  # the schema stage says what an entry must be
        if coll.field not in entry:
            if coll.required:
                return "authorise", f"{where}: entries of {coll.path!r} must say who sees them ({coll.field!r})"
            names: list[str] = [EVERYONE]
        else:
            raw = entry[coll.field]
            if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
                return "authorise", f"{where}/{coll.field}: must be a list of worker names or labels"
            names = raw
            unknown = next((n for n in names if n != EVERYONE and n not in vis.labels and n not in vis.workers), None)
            if unknown is not None:
                return "authorise", f"{where}/{coll.field}: {unknown!r} is neither a worker nor a label"
        wide = vis.beyond(worker, names)
        if wide is not None:
            allowed = ", ".join(sorted(vis.addresses.get(worker) or ())) or "only itself"
            shown = "left off (every worker)" if coll.field not in entry else repr(wide)
            return "authorise", (
                f"{where}/{coll.field}: {shown} is wider than {worker!r} may address (addresses: {allowed})"
            )
    return None


def _at(state: JSON, tokens: Tokens) -> JSON:
    node = state
    for token in tokens:
        if not isinstance(node, dict) or token not in node:
            return None
        node = node[token]
    return node


def _replaced(node: JSON, tokens: Tokens, value: JSON) -> JSON:
    """``node`` with the member at ``tokens`` (reached through objects) replaced by ``value``,
    copying only the objects on the way."""
    if not tokens:
        return value
    assert isinstance(node, dict)  # _at found the collection through objects only
    return {**node, tokens[0]: _replaced(node[tokens[0]], tokens[1:], value)}
