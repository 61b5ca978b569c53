"""Sub-board workers when a blueprint is accepted: the child blueprint made inline, and its checks.

``inline_boards`` replaces every ``board.blueprint`` that names a file (relative to the file of the
blueprint naming it, else to the working directory) or a template (``template:NAME``) by that
blueprint's data, recursively, so an accepted blueprint holds its children whole: its digest
covers them and a stored board needs no file to run or resume. A chain that comes back to a
blueprint it is inside (``a.yaml`` -> ``b.yaml`` -> ``a.yaml``, or a dict inside itself) is a
``BlueprintError`` naming the chain; so is nesting deeper than ``MAX_BOARD_NESTING``.

``board_issues`` checks one sub-board worker: no model or function of its own, an ``output``, a
child blueprint that is accepted and has an ``answer``, inputs naming members of the child's
state from pointers or CEL the worker's read contract covers, and a child answer whose schema
fits the parent's at ``output`` (the items of the array there, with ``each``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..kernel.cel import DEFAULT_CEL_BUDGET, MAX_COMPREHENSION_NESTING, CelExpr
from ..kernel.celpaths import member_paths
from ..kernel.pointer import MISSING, Pattern, PointerError, escape_token, parse_pointer, region_contains, resolve
from ..kernel.schema import SchemaIndex, pattern_locations
from ._celvars import compile_in_context
from .loading import BlueprintTextError, parse_blueprint_text, rules_on
from .models import Blueprint, Limits, WorkerSpec

__all__ = ["MAX_BOARD_NESTING", "SUBBOARD_VARIABLES", "InlineError", "board_issues", "inline_boards"]

MAX_BOARD_NESTING = 8
"""Deepest chain of sub-boards (a child's child's ... child) a blueprint may hold."""

SUBBOARD_VARIABLES = frozenset({"state", "item", "index"})
"""What a sub-board worker's CEL inputs and ``each`` see: the parent's state as the worker may
read it, and (with ``each``) the item and its index."""

TEMPLATE_PREFIX = "template:"

Issue = tuple[str, str]  # (where, message); compile turns them into BlueprintIssue


class InlineError(UsageError, ValueError):
    """A sub-board blueprint that cannot be made inline: ``where`` in the blueprint, and why
    (``compile`` reports it as a BlueprintError)."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(message)
        self.where, self.message = where, message


_fail = InlineError


def _read(ref: str, base: Path | None, where: str) -> tuple[Any, str, Path | None]:
    """(the data of blueprint reference ``ref``, a key naming it for cycle checks, its directory)."""
    if ref.startswith(TEMPLATE_PREFIX):
        name = ref[len(TEMPLATE_PREFIX) :]
        shipped = resources.files(__package__ or "slateboard.blueprint") / "templates" / f"{name}.yaml"
        if not name.isidentifier() or not shipped.is_file():
            raise _fail(where, f"no built-in template {name!r} (slateboard templates lists them)")
        return rules_on(parse_blueprint_text(shipped.read_text(encoding="utf-8"))), ref, None
    path = Path(ref) if base is None or Path(ref).is_absolute() else base / ref
    try:
        text = path.read_text(encoding="utf-8")
        data = rules_on(parse_blueprint_text(text, json_text=path.suffix == ".json"))
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(where, f"cannot read the sub-board blueprint {ref!r}: {exc}") from None
    except BlueprintTextError as exc:
        raise _fail(where, f"the sub-board blueprint {ref!r} is not readable: {exc}") from None
    return data, str(path.resolve()), path.resolve().parent


def inline_boards(data: Any, base: Path | None = None, chain: Sequence[str] = ()) -> Any:
    """``data`` (blueprint JSON or a ``Blueprint``) with every sub-board blueprint inline (see the
    module docstring); ``base`` is the directory of the file ``data`` came from, ``chain`` the
    blueprints it is inside (their files, or ``id:`` of an inline one). Returns ``data`` itself
    when it has no sub-board; raises ``InlineError`` for a cycle, a deep chain or a reference
    that cannot be read."""
    if isinstance(data, Blueprint):
        if not any(w.board is not None for w in data.workers.values()):
            return data
        data = data.to_json()
    workers = data.get("workers") if isinstance(data, dict) else None
    if not isinstance(workers, dict) or not any(isinstance(w, dict) and "board" in w for w in workers.values()):
        return data
    chain = (*chain, f"id:{id(data)}") if not chain else tuple(chain)
    out = dict(data)
    out["workers"] = dict(workers)
    for name, worker in workers.items():
        board = worker.get("board") if isinstance(worker, dict) else None
        if not isinstance(board, dict):
            continue
        where = f"/workers/{escape_token(str(name))}/board/blueprint"
        ref = board.get("blueprint")
        if isinstance(ref, str):
            child, key, child_base = _read(ref, base, where)
        elif isinstance(ref, (dict, Blueprint)):
            child, key, child_base = rules_on(ref) if isinstance(ref, dict) else ref, f"id:{id(ref)}", base
        else:
            continue  # the shape check reports it
        if key in chain:
            shown = " -> ".join(k if not k.startswith("id:") else "(inline)" for k in (*chain, key))
            raise _fail(where, f"sub-board cycle: the blueprint names itself ({shown})")
        if len(chain) >= MAX_BOARD_NESTING:
            raise _fail(where, f"sub-boards nest deeper than {MAX_BOARD_NESTING} levels")
        child = inline_boards(child, child_base, (*chain, key))
        if isinstance(child, Blueprint):
            child = child.to_json()
        out["workers"][name] = {**worker, "board": {**board, "blueprint": child}}
    return out


def _covered(reads: Sequence[Pattern], tokens: tuple[str, ...]) -> bool:
    return any(region_contains(p, tokens) for p in reads)


def _source_issues(
    text: str, where: str, reads: Sequence[Pattern], names: frozenset[str], compiled: Any
) -> list[Issue]:
    """Issues of one input or ``each`` source: a pointer the reads cover, or CEL over ``names``
    whose state paths the reads cover."""
    if text.startswith("/"):
        try:
            tokens = parse_pointer(text)
        except PointerError as exc:
            return [(where, str(exc))]
        if not _covered(reads, tokens):
            return [(where, f"{text!r} is not covered by the worker's read patterns")]
        return []
    expr, issue = compiled(text, names)
    if issue is not None or expr is None:
        return [(where, issue or "CEL does not compile")]
    if not expr.uses("state"):
        return []
    chains = [tokens for var, tokens in member_paths(text, ("state",)) if var == "state"]
    if not chains:
        return [(where, "this CEL reads 'state' in a way that cannot be checked against the worker's reads")]
    unread = [t for t in chains if not _covered(reads, t)]
    if unread:
        shown = ", ".join("/" + "/".join(t) for t in unread)
        return [(where, f"CEL reads {shown}, which the worker's read patterns do not cover")]
    return []


def board_issues(
    name: str,
    spec: WorkerSpec,
    reads: Sequence[Pattern],
    locations: SchemaIndex | None,
    limits: Limits,
    accept: Callable[[dict[str, Any], str], tuple[Any, list[Issue]]],
) -> list[Issue]:
    """Every issue of sub-board worker ``name`` (see the module docstring); its CEL is compiled
    within the parent's ``limits`` like the blueprint's other expressions; ``accept(data, label)`` compiles the child blueprint: (the compiled one or None, its issues)."""
    board = spec.board
    assert board is not None
    budget, nesting = limits.cel_budget or DEFAULT_CEL_BUDGET, limits.cel_nesting or MAX_COMPREHENSION_NESTING

    def compiled(text: str, names: frozenset[str]) -> tuple[CelExpr | None, str | None]:
        return compile_in_context(text, names, budget=budget, max_nesting=nesting)

    base = f"/workers/{escape_token(name)}"
    found: list[Issue] = []
    if spec.model is not None or spec.function is not None:
        found.append((base, "a sub-board worker runs its child board: it has no model or function"))
    if spec.output is None:
        found.append((f"{base}/output", "a sub-board worker needs 'output': where the child's answer goes"))
    elif board.each is not None and spec.output.endswith("/-"):
        found.append((f"{base}/output", "with 'each' the answers are one list: 'output' cannot append ('-')"))
    names = SUBBOARD_VARIABLES if board.each is not None else frozenset({"state"})
    if board.each is not None:
        found += _source_issues(board.each, f"{base}/board/each", reads, names, compiled)
    for key, source in board.inputs.items():
        found += _source_issues(source, f"{base}/board/inputs/{escape_token(key)}", reads, names, compiled)
    if not isinstance(board.blueprint, dict):
        return [*found, (f"{base}/board/blueprint", "the sub-board blueprint was not made inline")]
    child, problems = accept(board.blueprint, f"sub-board of {name}")
    if child is None:
        return found + [(f"{base}/board/blueprint{where}", message) for where, message in problems]
    members = child.spec.state_schema.get("properties")
    for key in board.inputs:
        if not isinstance(members, dict) or key not in members:
            known = ", ".join(sorted(members)) if isinstance(members, dict) else "none"
            found.append(
                (
                    f"{base}/board/inputs/{escape_token(key)}",
                    f"the child's state has no member {key!r} (members: {known})",
                )
            )
    if child.spec.answer is None:
        return [*found, (f"{base}/board/blueprint/answer", "the child blueprint has no 'answer' to propose")]
    if locations is not None and spec.output is not None:
        problem = _fit(child.schema, parse_pointer(child.spec.answer), locations, spec.output, board.each is not None)
        if problem is not None:
            found.append((f"{base}/output", problem))
    return found


# -- does the child's answer fit the parent's path? ---------------------------------------------
_NUMBERS = {"integer": {"integer"}, "number": {"integer", "number"}}


def _types(node: Any) -> set[str] | None:
    kind = node.get("type") if isinstance(node, dict) else None
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list) and all(isinstance(k, str) for k in kind):
        return set(kind)
    return None  # not declared here (any, or a combinator the check leaves to the kernel)


def _deref(node: Any, root: Any) -> Any:
    seen: set[str] = set()
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#"):
        ref = node["$ref"]
        target = resolve(root, ref[1:]) if ref not in seen else MISSING
        if target is MISSING:
            return True
        seen.add(ref)
        node = target
    return node


def _mismatch(child: Any, croot: Any, parent: Any, proot: Any, at: str, depth: int = 0) -> str | None:
    """Why a value the child's schema allows may not fit the parent's (types declared on both
    that cannot meet, a member the parent requires the child's closed object lacks), or None."""
    child, parent = _deref(child, croot), _deref(parent, proot)
    if depth > 16 or not isinstance(parent, dict) or not isinstance(child, dict):
        return None
    ptypes, ctypes = _types(parent), _types(child)
    if ptypes is not None and ctypes is not None:
        allowed = set().union(*(_NUMBERS.get(t, {t}) for t in ptypes))
        extra = ctypes - allowed
        if extra:
            return f"at {at or '/'} the child's answer may be {'/'.join(sorted(extra))}, the parent's path takes {'/'.join(sorted(ptypes))}"
    cprops, pprops = child.get("properties"), parent.get("properties")
    if isinstance(cprops, dict) and isinstance(pprops, dict):
        closed = child.get("additionalProperties") is False
        for key in parent.get("required") or ():
            if closed and key not in cprops:
                return f"at {at or '/'} the parent's path requires member {key!r}, which the child's answer never has"
        for key, sub in pprops.items():
            if key in cprops:
                why = _mismatch(cprops[key], croot, sub, proot, f"{at}/{key}", depth + 1)
                if why is not None:
                    return why
    if isinstance(child.get("items"), (dict, bool)) and isinstance(parent.get("items"), (dict, bool)):
        return _mismatch(child["items"], croot, parent["items"], proot, f"{at}/*", depth + 1)
    return None


def _fit(child: SchemaIndex, answer: tuple[str, ...], parent: SchemaIndex, output: str, each: bool) -> str | None:
    """Why the child's answer (a list of them, with ``each``) does not fit at ``output``, or None."""
    tokens = parse_pointer(output)
    if each:
        for holder in pattern_locations(parent, tokens):
            kinds = _types(_deref(holder.schema, parent.schema))
            if kinds is not None and "array" not in kinds:
                return f"with 'each' the answers are a list, and {output!r} takes {'/'.join(sorted(kinds))}"
    theirs = pattern_locations(child, answer)
    ours = pattern_locations(parent, (*tokens, "0") if each else tokens)
    if not theirs:
        return f"the child's answer {'/' + '/'.join(answer)!r} matches no location of its state schema"
    if not ours:
        what = "the items of " if each else ""
        return f"{what}{output!r} match no location of the parent's state schema"
    for c in theirs:
        for p in ours:
            why = _mismatch(c.schema, child.schema, p.schema, parent.schema, "")
            if why is not None:
                return f"the child's answer does not fit {output!r}{' (each item)' if each else ''}: {why}"
    return None
