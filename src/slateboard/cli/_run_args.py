"""What ``run``, ``resume`` and ``submit`` check before a board is created or driven.

Every check here fails with a one-line ``CliError`` (exit 2 for a malformed option) before the
store is touched, so a bad command line never leaves a half-made board behind: the option
values (``--parallel``, ``--control``, ``--max-cost``, ``--input``, ``--mcp``, ``--api-key-env``),
the model string and the blueprint's workers, the named ledger, a resume's ``--max-cost`` (it may
lower the board's recorded cap, never raise it), and whether a stored board may still be resumed
under its blueprint.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

from ._common import store_hint
from ._errors import EXIT_USAGE, CliError

if TYPE_CHECKING:
    from ..blueprint.compile import CompiledBlueprint
    from ..models.protocol import Model


def parse_inputs(compiled: CompiledBlueprint, task: str | None, pairs: list[str], label: str) -> dict[str, Any] | None:
    """The top-level values to merge into the initial state: ``--task`` (at the blueprint's task
    pointer, ``/task`` unless the blueprint says otherwise) and every ``--input NAME=VALUE``
    (VALUE read as JSON when it parses)."""
    from ..kernel.jsonvalue import nesting_depth

    schema = compiled.spec.state_schema
    props = schema.get("properties") if isinstance(schema, dict) else None
    known = sorted(props) if isinstance(props, dict) else []
    listing = ", ".join(known) or "none"
    out: dict[str, Any] = {}
    if task is not None:
        task_key = compiled.spec.task.lstrip("/").replace("~1", "/").replace("~0", "~")
        if task_key not in known:
            raise CliError(
                f"--task given, but blueprint {label} has no {task_key!r} property in its state schema"
                f" (its properties: {listing}); set one with --input NAME=VALUE"
            )
        out[task_key] = task
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise CliError(f"--input {pair!r}: expected NAME=VALUE", code=EXIT_USAGE)
        if key not in known:
            raise CliError(f"--input {key}: blueprint {label} has no property {key!r} (its properties: {listing})")
        # Checked before decoding (issue 29, R13): json recurses and fails past ~1000 levels.
        depth, limit = nesting_depth(raw), compiled.spec.limits.max_depth
        if depth > limit:
            raise CliError(
                f"--input {key}: the value nests {depth} levels deep, over the blueprint's limit of {limit}"
                " (limits.max_depth)",
                code=EXIT_USAGE,
            )
        try:
            out[key] = json.loads(raw)
        except ValueError:
            out[key] = raw
    return out or None


def parse_parallel(value: str) -> int | Literal["auto"]:
    """``--parallel``: ``auto`` or a whole number of at least 1 (a usage error otherwise)."""
    if value.strip().lower() == "auto":
        return "auto"
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise CliError(f"--parallel: expected a whole number of at least 1 or 'auto', got {value!r}", code=EXIT_USAGE)
    return n


def check_control(control: str) -> None:
    """``--control``: one of the control units (a usage error otherwise)."""
    from ..scheduling.units import CONTROL_UNITS

    if control not in CONTROL_UNITS:
        raise CliError(f"--control: expected one of {', '.join(CONTROL_UNITS)}, got {control!r}", code=EXIT_USAGE)


def parse_max_cost(value: str | None) -> float | None:
    """``--max-cost``: a finite number of dollars > 0 (a one-line usage error otherwise)."""
    if value is None:
        return None
    try:
        cap = float(value)
    except ValueError:
        cap = float("nan")
    if not (cap > 0 and cap != float("inf")):
        raise CliError(f"--max-cost: expected a number of dollars > 0, got {value!r}", code=EXIT_USAGE)
    return cap


async def named_ledgers(st: Any, name: str | None) -> list[Any]:
    """``--ledger NAME``: the named ledger of the store (SQLite or PostgreSQL), which must exist
    (``slateboard ledger set NAME USD`` creates it); a one-line usage error otherwise."""
    if name is None:
        return []
    from ..errors import InvalidInput, UnknownName
    from ..runtime.ledger import ledger_for

    try:
        shared = ledger_for(st)
        await shared.state(name)
    except (InvalidInput, UnknownName) as exc:
        raise CliError(f"--ledger: {exc}", code=EXIT_USAGE) from None
    return [(shared, name)]


def lower_cap(info: Any, cap: float | None) -> None:
    """``resume --max-cost``: a cap for this resume may lower the one the board was started with
    (the lower one holds), never raise it: a higher one is a one-line usage error naming both."""
    if cap is None:
        return
    from ..errors import InvalidInput
    from ..runtime.ledger import recorded_spend

    try:
        recorded, _ = recorded_spend(info.meta)
    except InvalidInput as exc:
        raise CliError(f"board {info.board_id}: {exc}") from None
    if recorded is not None and cap > recorded:
        raise CliError(
            f"--max-cost: ${cap:.4f} is above the ${recorded:.4f} board {info.board_id} was started with;"
            f" a resume may lower a board's spend cap, never raise it (without --max-cost ${recorded:.4f} holds)",
            code=EXIT_USAGE,
        )


def mcp_servers(compiled: CompiledBlueprint, pairs: list[str]) -> dict[str, list[str]]:
    """``WORKER=SERVER`` options by worker (issue 17: MCP tools for LLM workers)."""
    out: dict[str, list[str]] = {}
    for pair in pairs:
        worker, sep, server = pair.partition("=")
        if not sep or not worker.strip() or not server.strip():
            raise CliError(f"--mcp {pair!r}: expected WORKER=SERVER (a command line or a URL)", code=EXIT_USAGE)
        if worker.strip() not in compiled.workers:
            known = ", ".join(sorted(compiled.workers))
            raise CliError(f"--mcp {pair!r}: no worker {worker.strip()!r} (workers: {known})", code=EXIT_USAGE)
        out.setdefault(worker.strip(), []).append(server.strip())
    if out:
        import importlib.util

        if importlib.util.find_spec("mcp") is None:
            raise CliError("--mcp needs the mcp extra: pip install 'slateboard[mcp]'", code=EXIT_USAGE)
    return out


def scope_key(model: str | None, variable: str | None) -> None:
    """``--api-key-env NAME``: the key in NAME goes to --model's endpoint only."""
    if variable is None:
        return
    if not model:
        raise CliError("--api-key-env needs --model (the endpoint the key is for)", code=EXIT_USAGE)
    from ..models.registry import scope_api_key_env

    scope_api_key_env(model, variable)


def resolve_workers(compiled: CompiledBlueprint, model: str | None) -> Model | None:
    """Resolve the model string and build every worker once before a board exists, so a bad
    model string or function reference fails without leaving a half-made board behind."""
    from ..models import resolve_model
    from ..workers.factory import make_workers

    resolved = resolve_model(model) if model else None
    make_workers(compiled, model=resolved)
    return resolved


async def check_genesis(
    st: Any,
    board_id: str,
    compiled: CompiledBlueprint,
    initial: Any,
    store: str | None,
    stored_blueprint: Any = None,
    meta: dict[str, Any] | None = None,
) -> None:
    """Refuse to resume a board whose stored blueprint or initial state no longer matches the
    one it was created with (the binding its store wrote at creation, issue 29 R1) or the one its
    log began with (record 1's genesis binding): the run would commit under rules the log never
    agreed to."""
    from ..kernel.record import board_genesis_problem, genesis_problem
    from ..kernel.statehash import state_hash

    problem = board_genesis_problem(meta or {}, stored_blueprint, initial) if stored_blueprint is not None else None
    if problem is None:
        first = await st.read_records(board_id, 1, limit=1)
        problem = genesis_problem(first[0], compiled.digest, state_hash(initial)) if first else None
    if problem is not None:
        raise CliError(
            f"board {board_id} cannot be resumed: {problem}"
            f" (see: slateboard replay {board_id} --verify{store_hint(store)})"
        )
