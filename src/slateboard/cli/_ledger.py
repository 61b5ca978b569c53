"""``slateboard ledger show|set|reset|history|delete``: the store's named spend ledgers (issue 33).

A ledger is a cap in dollars that every board run with ``--ledger NAME`` reserves its model calls
against, across boards and processes (``runtime.ledger``). They live in the store: the SQLite
file (the default store) or the PostgreSQL database. Bad input is a one-line error naming the
value, exit code 2: a cap that is not a number > 0 (or ``none``), a ledger that does not exist
on ``show NAME``, ``reset`` or ``delete``, a store that holds no ledgers (``memory://``).
``refusal`` is the one line ``run``/``resume`` print when a board stopped at a spend cap.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import typer

from ._common import JsonOption, StoreOption, console, opened_store, print_json, run_async, store_label
from ._errors import EXIT_USAGE, CliError

ledger_app = typer.Typer(
    help="Spend ledgers in the store: named caps in dollars shared by boards (run --ledger NAME).",
    no_args_is_help=True,
)

T = TypeVar("T")


def parse_cap(text: str) -> float | None:
    """A cap from the command line: a finite number of dollars > 0, or ``none`` (uncapped: the
    ledger only counts). Anything else is a usage error naming the value."""
    if text.strip().lower() == "none":
        return None
    try:
        cap = float(text)
    except ValueError:
        cap = math.nan
    if not (math.isfinite(cap) and cap > 0):
        raise CliError(f"ledger cap: expected a number of dollars > 0 or 'none', got {text!r}", code=EXIT_USAGE)
    return cap


async def _with_ledger(store: str | None, use: Callable[[Any], Awaitable[T]], *, create: bool) -> T:
    from ..errors import InvalidInput, UnknownName
    from ..runtime.ledger import ledger_for

    async with opened_store(store, create=create) as st:
        try:
            ledger = ledger_for(st)
        except InvalidInput as exc:
            raise CliError(f"{store_label(store)}: {exc}", code=EXIT_USAGE) from None
        try:
            return await use(ledger)
        except UnknownName as exc:
            raise CliError(f"{exc} in {store_label(store)}", code=EXIT_USAGE) from None


def _row(state: Any) -> dict[str, Any]:
    return {"name": state.name, "cap_usd": state.cap, "spent_usd": state.spent, "reserved_usd": state.reserved}


def _print_state(state: Any, as_json: bool) -> None:
    """One ledger after a change: its JSON row, or its one line."""
    if as_json:
        print_json(_row(state))
    else:
        console().print(state.line(), highlight=False)


def ledger_show_command(
    name: Annotated[str | None, typer.Argument(help="One ledger (default: every ledger of the store).")] = None,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Each ledger's cap, what was spent and what running calls hold reserved, in dollars, and
    what each board holds of that reservation."""

    async def go(ledger: Any) -> list[tuple[Any, dict[str, float]]]:
        names = [name] if name is not None else await ledger.names()
        out = []
        for n in names:
            held = await ledger.holders(n)  # first: it releases the holds whose lease lapsed
            out.append((await ledger.state(n), held))
        return out

    states = run_async(lambda: _with_ledger(store, go, create=False))
    if as_json:
        print_json([{**_row(s), "held_by": held} for s, held in states])
        return
    out = console()
    for s, held in states:
        out.print(s.line(), highlight=False)
        for board, usd in held.items():
            who = f"board {board}" if board else "a run without a board id (a runner process or a team)"
            out.print(f"  {who} holds ${usd:.4f}", highlight=False)
    if not states:
        out.print(f"no ledgers in {store_label(store)} (create one with: slateboard ledger set NAME USD)")


def ledger_set_command(
    name: Annotated[str, typer.Argument(help="The ledger (created when it does not exist).")],
    cap: Annotated[str, typer.Argument(metavar="USD", help="Its cap in dollars, or 'none' to only count.")],
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create the ledger NAME or change its cap; what was spent and reserved is kept."""
    dollars = parse_cap(cap)
    if not name.strip():
        raise CliError("ledger set: the ledger name must not be empty", code=EXIT_USAGE)

    async def go(ledger: Any) -> Any:
        await ledger.set_cap(name, dollars)
        return await ledger.state(name)

    state = run_async(lambda: _with_ledger(store, go, create=True))
    _print_state(state, as_json)


def ledger_reset_command(
    name: Annotated[str, typer.Argument(help="An existing ledger.")],
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Zero what the ledger NAME has spent and holds reserved (a new day, a new month); its cap
    is kept and what it had spent goes into its history (``ledger history NAME``). Calls still
    running settle against the reset ledger."""

    async def go(ledger: Any) -> Any:
        await ledger.reset(name)
        return await ledger.state(name)

    state = run_async(lambda: _with_ledger(store, go, create=False))
    _print_state(state, as_json)


def ledger_delete_command(
    name: Annotated[str, typer.Argument(help="An existing ledger.")],
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Remove the ledger NAME and what it holds reserved; what it had spent goes into its history
    (``ledger history NAME`` still lists it). A board started with it is refused its next model
    call, in one line naming the ledger (create it again with ``ledger set``, then resume)."""

    async def go(ledger: Any) -> Any:
        state = await ledger.state(name)
        await ledger.delete(name)
        return state

    state = run_async(lambda: _with_ledger(store, go, create=False))
    if as_json:
        print_json({**_row(state), "deleted": True})
    else:
        console().print(f"deleted {state.line()}", highlight=False)


def refusal(records: list[Any], end_reason: str) -> str | None:
    """Why the board stopped at ``end_reason`` (``budget:<ledger>``), from the last record whose
    model call was refused: the ledger, its cap and spend, and what to do. None if none says."""
    mark = f"{end_reason}: "
    for record in reversed(records):
        error = record.meta.get("error") if isinstance(record.meta, dict) else None
        if isinstance(error, str) and mark in error:
            # after the mark: the model string before it may hold a URL (never printed here)
            return error.split(mark, 1)[1].splitlines()[0]
    return None


def ledger_history_command(
    name: Annotated[str, typer.Argument(help="An existing ledger.")],
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Every reset of the ledger NAME, oldest first: what it had spent and held reserved just
    before, and when. A reset zeroes the counters; this keeps the spend in view."""

    async def go(ledger: Any) -> list[Any]:
        return list(await ledger.history(name))

    resets = run_async(lambda: _with_ledger(store, go, create=False))
    if as_json:
        print_json([{"name": r.name, "spent_usd": r.spent, "reserved_usd": r.reserved, "at": r.at} for r in resets])
        return
    out = console()
    for r in resets:
        out.print(r.line(), highlight=False)
    if not resets:
        out.print(f"ledger {name}: never reset")


ledger_app.command("show")(ledger_show_command)
ledger_app.command("history")(ledger_history_command)
ledger_app.command("set", context_settings={"ignore_unknown_options": True})(ledger_set_command)
ledger_app.command("reset")(ledger_reset_command)
ledger_app.command("delete")(ledger_delete_command)
