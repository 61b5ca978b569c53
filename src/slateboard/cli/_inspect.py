"""Reading boards back: ``boards``, ``log``, ``show`` and ``replay --verify``.

Nothing here writes to the store. States are rebuilt by replaying the log (``slateboard.kernel.
replay``), never taken on trust from a snapshot; ``replay --verify`` also checks the snapshot.
"""

from __future__ import annotations

import datetime as _dt
import sys
from itertools import takewhile
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.json import JSON as RichJSON
from rich.table import Table
from rich.text import Text

from ..errors import StoreError
from ..status import end_status
from ..vocabulary import (
    END_EXHAUSTED,
    END_FAILED,
    END_RUNNING,
    END_SOLVED,
    OUTCOME_ACCEPTED,
    OUTCOME_ACTION,
    OUTCOME_NOOP,
    OUTCOME_REJECTED,
    EndStatus,
)
from ._anchor import AnchorOption, KeyFileOption, seq_in
from ._common import (
    JsonOption,
    StoreOption,
    cell,
    console,
    opened_store,
    print_json,
    resolve_board,
    run_async,
    short,
    store_hint,
)
from ._errors import EXIT_VERIFY_FAILED, CliError, one_line
from ._lineage import board_lineage, fork_cells, print_lineage, store_boards

if TYPE_CHECKING:
    from pathlib import Path

    from ..kernel.anchor import Checkpoint
    from ..kernel.record import Record
    from ..kernel.replay import ReplayReport
    from ..models.pricing import PriceTable
    from ..stores.base import BoardInfo, LoadedBoard

BoardArg = Annotated[
    str, typer.Argument(metavar="BOARD", help="A board id (or a unique prefix of one).", show_default=False)
]
OUTCOMES = (OUTCOME_ACCEPTED, OUTCOME_REJECTED, OUTCOME_NOOP, OUTCOME_ACTION)


_STYLES: dict[EndStatus, str] = {END_FAILED: "red", END_RUNNING: "yellow", END_EXHAUSTED: "yellow", END_SOLVED: "green"}
"""The colour of each end status in the boards table (none: the terminal's own)."""


def _when(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts).strftime("%m-%d %H:%M")


async def board_prices(st: Any, board_id: str) -> PriceTable:
    """The board's price table (its blueprint's ``limits.prices`` over the built-in rules); the
    built-in rules alone when the stored blueprint cannot be read (costs then show unknown for
    a model only the blueprint priced: never a guess)."""
    from ..models.pricing import PriceTable
    from ..runtime.result import blueprint_prices

    try:
        return blueprint_prices((await st.load_board(board_id)).blueprint)
    except (StoreError, ValueError):
        return PriceTable()


async def board_cost(st: Any, b: BoardInfo) -> float | None:
    """What a board's log cost, priced with its own table (None: unknown, also when the log
    cannot be read whole: ``log`` names the damaged record)."""
    from ..runtime.result import cost_of

    table = await board_prices(st, b.board_id)
    try:
        records = await st.read_records(b.board_id, limit=b.seq)
    except StoreError:
        return None
    return cost_of(records, table)


def _info_json(b: BoardInfo, cost: float | None = None) -> dict[str, Any]:
    from ..runtime.result import cost_json

    return {
        "board_id": b.board_id,
        "name": b.name,
        "status": b.status,
        "end_status": end_status(b.status, b.reason),
        "reason": b.reason,
        "version": b.version,
        "records": b.seq,
        "created_at": b.created_at,
        "updated_at": b.updated_at,
        "cost_usd": cost_json(cost),
    }


def boards_command(
    store: StoreOption = None,
    status: Annotated[
        str | None, typer.Option("--status", help="Only boards in this status: running, paused, done, failed.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """List the boards of a store, oldest first, with what each one's log cost in dollars
    (priced with its blueprint's ``limits.prices``; ``unknown`` when a model has no price)."""
    from ..models.pricing import format_cost
    from ..stores.base import BOARD_STATUSES

    if status is not None and status not in BOARD_STATUSES:
        raise CliError(f"unknown status {status!r} (one of: {', '.join(BOARD_STATUSES)})", code=2)

    async def go() -> tuple[list[tuple[BoardInfo, float | None]], list[BoardInfo]]:
        async with opened_store(store, create=False) as st:
            every = await st.list_boards()
            return [(b, await board_cost(st, b)) for b in every if status is None or b.status == status], every

    found, every = run_async(go)
    if as_json:
        print_json([{**_info_json(b, cost), **board_lineage(b, every)} for b, cost in found])
        return
    out = console()
    if not found:
        out.print("no boards in this store")
        return
    table = Table(box=None, pad_edge=False)
    forks = fork_cells([b for b, _ in found])
    columns = ("board", "name", "status", "version", "records", "cost", "updated", *(("fork of",) if forks else ()))
    for col in (*columns, "reason"):
        wraps = col in ("name", "reason")
        table.add_column(
            col,
            justify="right" if col in ("version", "records", "cost") else "left",
            no_wrap=not wraps,
            min_width=6 if wraps else None,
        )
    for b, cost in found:
        shown = end_status(b.status, b.reason)
        style = _STYLES.get(shown, "")
        table.add_row(
            b.board_id,
            cell(b.name),
            Text(shown, style=style),
            str(b.version),
            str(b.seq),
            format_cost(cost),
            _when(b.updated_at),
            *((forks[b.board_id],) if forks else ()),
            cell(b.reason),
        )
    out.print(table)


def log_command(
    board: BoardArg,
    store: StoreOption = None,
    worker: Annotated[list[str] | None, typer.Option("--worker", "-w", help="Only this worker's records.")] = None,
    outcome: Annotated[
        str | None, typer.Option("--outcome", "-o", help="Only records with this outcome: " + ", ".join(OUTCOMES) + ".")
    ] = None,
    stage: Annotated[str | None, typer.Option("--stage", help="Only rejections at this stage.")] = None,
    patches: Annotated[bool, typer.Option("--patches", help="Show each record's patch too.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Show a board's transaction log as a table (every record, or the filtered ones).

    The header gives the board's status (solved, exhausted, failed, paused, interrupted or running,
    the words `boards` uses). Columns: seq (record number), kind (proposal, circuit, approval, run,
    control), outcome (accepted: a new version; rejected: at the stage shown; noop: nothing changed,
    stage decline when the worker declined; held: awaiting approval; action: a kernel action),
    stage, ver (state version after the record), tokens (in + out; for a model proposal
    `179 (v69 f18 i31)` adds its prompt tokens spent on the view, the format rules and the
    instruction), cost (those tokens in dollars at the board's prices; unknown when the model has
    no price), reason. `--json` gives the board as `boards --json` does (with its fork `parent` and
    `children`) whose `records` lists each shown record whole with its `cost_usd`.
    """
    if outcome is not None and outcome not in OUTCOMES:
        raise CliError(f"unknown outcome {outcome!r} (one of: {', '.join(OUTCOMES)})", code=2)

    from ..models.pricing import format_cost
    from ..runtime.result import cost_json, cost_of, record_cost

    async def go() -> tuple[BoardInfo, list[Record], tuple[int, str] | None, PriceTable, list[BoardInfo]]:
        async with opened_store(store, create=False) as st:
            info = await resolve_board(st, board, store)
            intact = await read_intact(st, info.board_id, info.seq)
            return (info, *intact, await board_prices(st, info.board_id), await st.list_boards())

    info, records, damaged, prices, every = run_async(go)

    def finish() -> None:
        # The intact records were shown; now name the record that cannot be read (D15).
        if damaged is not None:
            raise CliError(
                f"the store is damaged: board {info.board_id}: record {damaged[0]} cannot be read: {damaged[1]}"
                f" (the {len(records)} records before it are shown)"
            )

    chosen = [
        r
        for r in records
        if (not worker or r.worker in worker)
        and (outcome is None or r.outcome == outcome)
        and (stage is None or r.stage == stage)
    ]
    if as_json:
        rows = [{**r.to_json(), "cost_usd": cost_json(record_cost(r, prices))} for r in chosen]
        print_json({**_info_json(info, cost_of(records, prices)), **board_lineage(info, every), "records": rows})
        finish()
        return
    out = console()
    out.print(
        f"board [bold]{info.board_id}[/] ({info.name}), {end_status(info.status, info.reason)}"
        + (f": {info.reason}" if info.reason else "")
        + f", version {info.version}, {len(records)} records"
        + (f", {len(chosen)} shown" if len(chosen) != len(records) else "")
        + f", cost {format_cost(cost_of(records, prices))}"
    )
    print_lineage(out, info, every)
    if not chosen:
        finish()
        return
    table = Table(box=None, pad_edge=False)
    table.add_column("seq", justify="right", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("outcome", no_wrap=True)
    table.add_column("worker", no_wrap=True)
    table.add_column("stage", no_wrap=True)
    table.add_column("ver", justify="right", no_wrap=True)
    table.add_column("tokens", justify="right", no_wrap=True)
    table.add_column("cost", justify="right", no_wrap=True)
    table.add_column("reason", overflow="fold")
    if patches:
        table.add_column("patch", overflow="fold")
    for r in chosen:
        style = {OUTCOME_ACCEPTED: "green", OUTCOME_REJECTED: "red", OUTCOME_NOOP: "yellow"}.get(r.outcome, "dim")
        row: list[str | Text] = [
            str(r.seq),
            r.kind,
            Text(r.outcome, style=style),
            r.worker or "-",
            r.stage or "-",
            str(r.version),
            tokens_cell(r),
            cost_cell(r, prices),
            Text(r.reason or "") if patches else cell(r.reason),
        ]
        if patches:
            row.append(r.patch or "")
        table.add_row(*row)
    out.print(table)
    out.print(LOG_LEGEND, style="dim", soft_wrap=True)
    finish()


LOG_LEGEND = (
    "columns: seq = record number; kind = proposal, circuit, approval, run or control; outcome ="
    " accepted (a new version), rejected (at stage), noop (nothing changed; stage decline = the worker"
    " declined), held (awaiting approval), action (a kernel action); stage = the kernel stage that decided;"
    " ver = state version after the record; tokens = tokens in + out, and for a model proposal"
    " (vV fF iI) = its prompt tokens spent on the view, the format rules and the instruction,"
    " cC wW = prompt tokens the provider read from and wrote to its cache;"
    " cost = those tokens in dollars at the board's prices (unknown: the model has no price)"
)
"""The legend line ``log`` prints under its table (also in ``log --help``)."""


def cost_cell(r: Record, prices: PriceTable) -> str:
    """A record's cost in dollars (``-`` for a record without tokens; ``unknown`` when its
    model has no price)."""
    from ..models.pricing import format_cost
    from ..runtime.result import record_cost, record_tokens

    if not record_tokens(r):  # a model judge's tokens count with the record it judged
        return "-"
    return format_cost(record_cost(r, prices))


def tokens_cell(r: Record) -> str:
    """A record's tokens; for an LLM proposal also its prompt tokens split into view, format and
    instruction (``meta.prompt_parts``), and the prompt tokens the provider read from its cache
    (``c``) and wrote to it (``w``): ``412 (v300 f90 i22 c256)``."""
    from ..runtime.result import record_tokens

    total = str(record_tokens(r))
    parts = r.meta.get("prompt_parts")
    split = parts.get("tokens") if isinstance(parts, dict) else None
    shown = [f"v{split.get('view', 0)} f{split.get('format', 0)} i{split.get('instruction', 0)}"] if (
        isinstance(split, dict) and any(split.values())
    ) else []  # fmt: skip
    shown += [f"{k}{n}" for k, n in (("c", r.usage.cache_read), ("w", r.usage.cache_write)) if n]
    return f"{total} ({' '.join(shown)})" if shown else total


async def read_intact(st: Any, board_id: str, last_seq: int) -> tuple[list[Record], tuple[int, str] | None]:
    """The board's records, or when one cannot be decoded, the intact ones before it and
    (its seq, why). Reads record by record only on that failure path."""
    from ..stores.base import StoreCorrupt

    try:
        return list(await st.read_records(board_id)), None
    except StoreCorrupt:
        pass
    records: list[Record] = []
    for seq in range(1, last_seq + 1):
        try:
            got = await st.read_records(board_id, seq, limit=1)
        except StoreCorrupt as exc:
            return records, (seq, one_line(str(exc)))
        if not got:
            break
        records.extend(got)
    return records, (len(records) + 1, "the log cannot be read past here")


async def _load_all(store: str | None, board: str) -> tuple[BoardInfo, LoadedBoard, list[Record]]:
    async with opened_store(store, create=False) as st:
        info = await resolve_board(st, board, store)
        records, damaged = await read_intact(st, info.board_id, info.seq)
        if damaged is not None:
            raise _Damaged(info, records, *damaged)
        loaded = await st.load_board(info.board_id)
        return info, loaded, records


async def _load_board(store: str | None, board_id: str) -> LoadedBoard:
    async with opened_store(store) as st:
        loaded: LoadedBoard = await st.load_board(board_id)
        return loaded


def _replay(loaded: LoadedBoard, records: list[Record], *, revalidate: bool = False) -> ReplayReport:
    from ..runtime.verify import replay_stored

    return replay_stored(loaded, records, revalidate=revalidate)


def show_command(
    board: BoardArg,
    store: StoreOption = None,
    at: Annotated[
        int | None, typer.Option("--at", min=0, metavar="VERSION", help="The state at this version (default: latest).")
    ] = None,
    path: Annotated[
        str | None, typer.Option("--path", metavar="POINTER", help="Only this part of the state (a JSON Pointer).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Show a board's state at any version, rebuilt by replaying its log."""
    info, loaded, records = run_async(lambda: _load_all(store, board))
    every = run_async(lambda: store_boards(store))
    last = records[-1].version if records else 0
    if at is not None and at > last:
        raise CliError(f"board {info.board_id} has no version {at} (its latest version is {last})")
    limit = last if at is None else at
    chosen = list(takewhile(lambda r: r.version <= limit, records))
    report = _replay(loaded, chosen)
    if not report.ok:
        raise CliError(
            f"board {info.board_id}: the log does not verify at record {report.bad_seq}: {report.problem}"
            f" (see: slateboard replay {info.board_id} --verify{store_hint(store)})"
        )
    state: Any = report.state
    if path:
        state = _pick(state, path)
    if as_json:
        data: dict[str, Any] = {"board_id": info.board_id, "version": report.version, "state_hash": report.state_hash}
        if path:
            data["path"] = path
        data.update(board_lineage(info, every))
        data["state"] = state
        print_json(data)
        return
    out = console()
    where = f" at {path}" if path else ""
    out.print(
        f"board [bold]{info.board_id}[/] ({info.name}) version {report.version}{where}, state {report.state_hash[:12]}"
    )
    print_lineage(out, info, every)
    import json

    out.print(RichJSON(json.dumps(state, ensure_ascii=False)))


def _pick(state: Any, pointer: str) -> Any:
    from ..kernel.pointer import MISSING, PointerError, parse_pointer, resolve

    try:
        tokens = parse_pointer(pointer)
    except PointerError as exc:
        raise CliError(f"--path {pointer!r} is not a JSON Pointer: {exc}", code=2) from None
    found = resolve(state, tokens)
    if found is MISSING:
        raise CliError(f"nothing at {pointer} in this state")
    return found


def replay_command(
    board: BoardArg,
    store: StoreOption = None,
    verify: Annotated[
        bool,
        typer.Option("--verify", help="Check every record's hash and state hash; exit 0 only when all match."),
    ] = False,
    revalidate: Annotated[
        bool, typer.Option("--revalidate", help="Also re-run every kernel decision and compare it with the log.")
    ] = False,
    anchor: AnchorOption = None,
    key_file: KeyFileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Replay a board's log from its initial state without calling any model.

    With --verify: exit 0 when every record and state hash matches, else name the first bad record and the problem.

    With --anchor FILE (and --key-file or $SLATEBOARD_ANCHOR_KEY): the log must also match every
    checkpoint signed for the board (see `slateboard anchor`), so a log rewritten or rolled back
    through the store is detected.

    Exit code 3 when the log does not verify. Without --verify the replayed state is printed too.
    """
    checkpoints = _read_anchor(anchor, key_file) if anchor is not None else None
    from ..blueprint.compile import BlueprintError
    from ..stores.base import StoreCorrupt

    try:
        info, loaded, records = run_async(lambda: _load_all(store, board))
    except _Damaged as damaged:
        if not verify:
            raise CliError(
                f"the store is damaged: board {damaged.info.board_id}: record {damaged.seq} cannot be read: {damaged.why}"
            ) from None
        # Verify what can be read, then name the undecodable record (D15).
        try:
            damaged_id = damaged.info.board_id
            loaded = run_async(lambda: _load_board(store, damaged_id))
            prefix = _replay(loaded, damaged.records)
        except Exception:
            prefix = None
        if prefix is not None and not prefix.ok:
            bad = prefix.bad_seq
            bad_rec = damaged.records[bad - 1] if bad is not None and 1 <= bad <= len(damaged.records) else None
            _fail_verify(damaged.info.board_id, bad, bad_rec, prefix.problem or "", prefix.checked, as_json)
        if prefix is None:  # the board cannot be loaded around the damage: say what could be read
            why = (
                f"cannot be read: {damaged.why}; the {len(damaged.records)} records before it can be read"
                " (slateboard log shows them) but the board cannot be loaded to verify them"
            )
            _fail_verify(damaged.info.board_id, damaged.seq, None, why, 0, as_json)
        checked = prefix.checked if prefix is not None else 0
        _fail_verify(damaged.info.board_id, damaged.seq, None, f"cannot be read: {damaged.why}", checked, as_json)
        return
    except StoreCorrupt as exc:
        if not verify:
            raise
        _fail_verify(board, None, None, f"the stored log cannot be read: {exc}", 0, as_json)
        return
    from ..kernel.record import board_genesis_hash, board_genesis_problem, is_unbound

    bound = board_genesis_problem(info.meta, loaded.blueprint, loaded.initial_state)
    if bound is not None:
        # The stored blueprint or initial state changed since the board was created (issue 29, R1).
        _fail_verify(info.board_id, 0, None, f"genesis: {bound}", 0, as_json)
        return
    try:
        report = _replay(loaded, records, revalidate=revalidate)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        # replay reports a bad record instead of raising; should a malformed one get through, say so
        if isinstance(exc, BlueprintError):
            raise
        _fail_verify(info.board_id, None, None, f"replay could not continue: {type(exc).__name__}: {exc}", 0, as_json)
        return
    problem = None if report.ok else report.problem
    bad = report.bad_seq
    if report.ok:
        problem = _check_snapshot(loaded, records)
    if problem is None and checkpoints is not None:
        from ..kernel.anchor import check_anchors

        key, cps = checkpoints
        mine = [cp for cp in cps if cp.board_id == info.board_id]
        genesis = board_genesis_hash(loaded.blueprint, loaded.initial_state)
        problem = (
            check_anchors(key, info.board_id, records, mine, genesis) if mine else f"{anchor} has no checkpoint for it"
        )
        if problem is not None:
            bad = max((cp.seq for cp in mine), default=0) if "rolled back" in problem else seq_in(problem)
    if problem is None and verify:
        from ._follow import fork_problem  # a fork also checks the parent's prefix it names

        problem = fork_problem(store, info.board_id)
    if problem is not None:
        bad_rec = records[bad - 1] if bad is not None and 1 <= bad <= len(records) else None
        _fail_verify(info.board_id, bad, bad_rec, problem, report.checked, as_json)
        return
    mode = "revalidated" if revalidate else "verified"
    from ._guards import guard_disagreements  # replay --revalidate also re-runs function guards

    disagree = guard_disagreements(info.meta, loaded, records) if revalidate else []
    if as_json:
        data: dict[str, Any] = {
            "board_id": info.board_id,
            "ok": True,
            "checked": report.checked,
            "version": report.version,
            "state_hash": report.state_hash,
            "revalidated": revalidate,
            "legacy_genesis": report.legacy_genesis,
            "genesis": "unbound" if is_unbound(info.meta) else "bound",
            "guard_disagreements": disagree,
        }
        if not verify:
            data["state"] = report.state
        print_json(data)
        return
    out = console()
    out.print(
        f"[green]ok[/]: board {info.board_id}: {report.checked} records {mode}, "
        f"version {report.version}, state {report.state_hash[:12]}"
    )
    if is_unbound(info.meta) and not report.checked:
        out.print(
            "[yellow]note[/]: unbound: this board predates genesis binding and has no record: its"
            " blueprint and initial state are not covered by any hash"
        )
    for line in disagree:
        out.print(f"[yellow]guard[/]: {line}", markup=True, highlight=False)
    if report.legacy_genesis:
        out.print(
            "[yellow]note[/]: this log predates genesis binding: its blueprint and initial state"
            " are not covered by the hash chain"
        )
    if not verify:
        import json

        out.print(RichJSON(json.dumps(report.state, ensure_ascii=False)))


class _Damaged(StoreError):
    """A stored record that cannot be decoded, with the intact records before it."""

    def __init__(self, info: BoardInfo, records: list[Record], seq: int, why: str) -> None:
        super().__init__(why)
        self.info, self.records, self.seq, self.why = info, records, seq, why


def _read_anchor(anchor: Path, key_file: Path | None) -> tuple[bytes, list[Checkpoint]]:
    from ..kernel.anchor import AnchorError, parse_checkpoints
    from ._anchor import read_key

    key = read_key(key_file)
    try:
        return key, parse_checkpoints(anchor.read_bytes())
    except OSError as exc:
        raise CliError(f"cannot read the anchor file {anchor}: {exc.strerror}") from None
    except AnchorError as exc:
        raise CliError(str(exc)) from None


def _check_snapshot(loaded: LoadedBoard, records: list[Record]) -> str | None:
    from ..runtime.verify import snapshot_problem

    return snapshot_problem(loaded, records)


def _fail_verify(
    board: str, bad_seq: int | None, record: Record | None, problem: str, checked: int, as_json: bool
) -> None:
    """Report a log that does not verify (the first bad record and the problem) and exit 3."""
    if as_json:
        data: dict[str, Any] = {"board_id": board, "ok": False, "checked": checked, "bad_seq": bad_seq}
        data["problem"] = problem
        data["record"] = record.to_json() if record is not None else None
        print_json(data)
    where = f"record {bad_seq}" if bad_seq is not None else "the log"
    sys.stderr.write(f"verification failed: board {board}: {where}: {problem}\n")
    if record is not None:
        sys.stderr.write(
            f"  first bad record: seq {record.seq}, {record.kind}, {record.outcome}, worker {record.worker or '-'},"
            f" stage {record.stage or '-'}, version {record.version}, reason {short(record.reason, 60) or '-'}\n"
        )
    sys.stderr.write(f"  {checked} record{'s' if checked != 1 else ''} before it verified\n")
    raise typer.Exit(EXIT_VERIFY_FAILED)
