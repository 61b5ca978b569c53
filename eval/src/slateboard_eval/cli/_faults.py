"""``slateboard faults``: the fault-injection suite side by side with peers."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from slateboard.cli.plugin import CliUsageError, JsonOption, run_async
from slateboard.progress import progress


def faults_command(
    n: Annotated[int, typer.Option("--n", min=1, help="Injections per fault type.")] = 200,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the injections (same seed, same injections).")] = 0,
    systems: Annotated[
        str | None,
        typer.Option(
            "--systems",
            metavar="LIST",
            help="Comma-separated systems: slateboard, loomflow, json_control, langgraph (default: all).",
        ),
    ] = None,
    faults: Annotated[
        str | None,
        typer.Option(
            "--faults",
            metavar="LIST",
            help="Comma-separated faults: invalid_json, bad_path_type, unauthorised, false_claim, cycle "
            "(default: all).",
        ),
    ] = None,
    store: Annotated[
        str, typer.Option("--store", metavar="URL", help="Store for slateboard's boards (default: in memory).")
    ] = "memory://",
    as_json: JsonOption = False,
    out: Annotated[
        Path | None, typer.Option("--out", metavar="FILE", help="Also write the JSON report to FILE.")
    ] = None,
) -> None:
    """Inject faults into the same scripted task on slateboard and its peers (the paper's Table 1).

    For invalid JSON, bad paths/types, unauthorised writes and false claims: the share of injections
    present in the committed state at the end; for cycles: the share of runs halted within the window.
    Peers whose packages are missing (slateboard's peers extra) are skipped with the reason.
    """
    from ..faults import FaultsError, emit, parse_names, run_suite
    from ..faults_systems import SYSTEMS
    from ..faults_task import FAULTS

    try:
        chosen_systems = parse_names(systems, SYSTEMS, "system")
        chosen_faults = parse_names(faults, FAULTS, "fault")
    except FaultsError as exc:
        raise CliUsageError(str(exc)) from None

    what = f"faults: {n} injection(s) x {len(chosen_faults)} fault(s) on {', '.join(chosen_systems)}"
    with progress(what) as bar:

        def report_cell(line: str) -> None:
            bar.update(f"faults: {' '.join(line.split())}")
            if not as_json:
                bar.print(line)

        report = run_async(lambda: run_suite(n, seed, chosen_systems, chosen_faults, store=store, progress=report_cell))
    emit(report, as_json=as_json, out=out, stdout=sys.stdout)
