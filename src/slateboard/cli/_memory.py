"""``slateboard memory``: distil finished boards into semantic memory, search it, prune it, and
query episodic memory (the logs) across boards."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._common import (
    JsonOption,
    StoreOption,
    cli_tenant,
    console,
    opened_store,
    print_json,
    resolve_board,
    run_async,
    store_label,
)
from ._errors import EXIT_USAGE, CliError

if TYPE_CHECKING:
    from ..memory import FactStore

memory_app = typer.Typer(
    help="Long-term memory beside the store: distil boards into facts, search, prune, query logs.",
    no_args_is_help=True,
)

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """Seconds in ``30d``, ``12h``, ``15m``, ``90s`` or a bare number of seconds."""
    t = text.strip().lower()
    try:
        if t and t[-1] in _UNITS:
            return float(t[:-1]) * _UNITS[t[-1]]
        return float(t)
    except ValueError:
        raise CliError(f"bad duration {text!r}: use e.g. 90d, 12h, 15m or seconds", code=EXIT_USAGE) from None


def _store_url(store: str | None) -> str:
    return store or store_label(None)


async def _open_memory(store: str | None) -> FactStore:
    """The memory beside ``store``, in the command's tenant (checked against the store's
    registry first: an unknown tenant is refused before any fact is read)."""
    from ..memory import open_memory
    from ..stores.tenancy import tenant_of_store

    tenant = None
    if cli_tenant() is not None:
        # a tenant's registry lives in the store: one that does not exist has no tenants
        async with opened_store(store, create=False) as st:
            tenant = tenant_of_store(st)
    return await open_memory(_store_url(store), tenant=tenant)


@memory_app.command("distill")
def distill_command(
    board: Annotated[str, typer.Argument(help="A finished board (id or unique prefix).")],
    path: Annotated[
        list[str], typer.Option("--path", "-p", help="Pattern of the values to remember, e.g. /facts/* (repeatable).")
    ],
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Write the values accepted proposals put at PATH into memory, with their provenance."""
    from ..memory import distill_board, open_memory
    from ..stores.tenancy import tenant_of_store

    async def go() -> tuple[str, list[int]]:
        async with opened_store(store) as st:
            info = await resolve_board(st, board, store)
            memory = await open_memory(_store_url(store), tenant=tenant_of_store(st))
            try:
                return info.board_id, await distill_board(st, info.board_id, memory, paths=path)
            except ValueError as exc:
                raise CliError(str(exc)) from None
            finally:
                await memory.close()

    board_id, ids = run_async(go)
    if as_json:
        print_json({"board": board_id, "facts": ids})
    else:
        console().print(f"board {board_id}: {len(ids)} new fact(s) in memory")


@memory_app.command("search")
def search_command(
    query: Annotated[str, typer.Argument(help="Words to look for (any of them; BM25 ranking).")],
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="How many facts.")] = 5,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """The facts that best match QUERY, with their provenance (board, record seq, worker)."""

    async def go() -> list[dict[str, Any]]:
        memory = await _open_memory(store)
        try:
            return [{**f.to_json(), "score": f.score} for f in await memory.search(query, k=k)]
        finally:
            await memory.close()

    found = run_async(go)
    if as_json:
        print_json(found)
        return
    out = console()
    for f in found:
        out.print(f"[{f['fact']}] {f['text']}  (board {f['board']}, seq {f['seq']}, worker {f['worker']})")
    if not found:
        out.print("no matching facts")


@memory_app.command("prune")
def prune_command(
    unused_for: Annotated[
        str | None, typer.Option("--unused-for", help="Drop facts not retrieved (nor written) for this long, e.g. 90d.")
    ] = None,
    older_than: Annotated[
        str | None, typer.Option("--older-than", help="Drop facts written before this long ago.")
    ] = None,
    keep_last: Annotated[int | None, typer.Option("--keep-last", min=0, help="Keep only the newest N facts.")] = None,
    store: StoreOption = None,
) -> None:
    """Apply retention rules to memory (a fact goes when any rule given selects it)."""
    if unused_for is None and older_than is None and keep_last is None:
        raise CliError("give at least one rule: --unused-for, --older-than or --keep-last", code=EXIT_USAGE)

    async def go() -> int:
        memory = await _open_memory(store)
        try:
            return await memory.prune(
                unused_for_s=parse_duration(unused_for) if unused_for else None,
                older_than_s=parse_duration(older_than) if older_than else None,
                keep_last=keep_last,
            )
        finally:
            await memory.close()

    console().print(f"{run_async(go)} fact(s) pruned")


@memory_app.command("episodes")
def episodes_command(
    text: Annotated[str | None, typer.Option("--text", help="Text in the patch or the reason.")] = None,
    worker: Annotated[str | None, typer.Option("--worker", help="Only this worker's records.")] = None,
    outcome: Annotated[str | None, typer.Option("--outcome", help="accepted, rejected or held.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 50,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Episodic memory: proposals across every board of the store that match the filters."""
    from ..memory import episodes

    async def go() -> list[Any]:
        async with opened_store(store) as st:
            return await episodes(st, text=text, worker=worker, outcome=outcome, limit=limit)

    found = run_async(go)
    if as_json:
        print_json([e.to_json() for e in found])
        return
    out = console()
    for e in found:
        r = e.record
        why = f" {r.stage}: {r.reason}" if r.stage else ""
        out.print(f"{e.board} #{r.seq} {r.worker} {r.outcome}{why} {(r.patch or '')[:100]}")
    if not found:
        out.print("no matching records")
