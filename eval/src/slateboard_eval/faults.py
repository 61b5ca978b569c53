"""Fault injection side by side with peers: the PatchBoard paper's Table 1, reproduced.

``N`` injections of each fault type (``faults_task.FAULTS``) go into the same scripted
claim-verification task run by each system (``faults_systems.SYSTEMS``): slateboard (Runner,
kernel, store), the plain blackboard ``loomflow``, a structured JSON blackboard control, and
LangGraph. For ``invalid_json``, ``bad_path_type``, ``unauthorised`` and ``false_claim`` the
figure is the contamination rate: the share of injections present in the committed state at the
end, by one detector for every system (``faults_task.contaminated``). For ``cycle`` it is the halt
rate: the share of cycling runs that stopped within ``WINDOW`` worker calls of the onset. Every
rate comes with its Wilson 95% interval.

Run it with ``slateboard faults`` or ``python benchmarks/faults.py`` (same options)::

    slateboard faults [--n 200] [--seed 0] [--systems slateboard,loomflow,json_control,langgraph]
                      [--faults invalid_json,bad_path_type,unauthorised,false_claim,cycle]
                      [--store memory://] [--json] [--out FILE]

A peer whose package is missing is skipped with the reason printed; slateboard always runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from slateboard.errors import InvalidInput, UsageError

from .faults_systems import (
    SYSTEMS,
    SystemOutcome,
    missing,
    run_json_control,
    run_langgraph,
    run_loomflow,
    run_slateboard,
)
from .faults_task import CYCLE, FAULTS, MAX_STEPS, Injection, clean_outcome, contaminated, make_injection

__all__ = [
    "DEFAULT_N",
    "WINDOW",
    "Cell",
    "FaultsError",
    "SuiteReport",
    "main",
    "parse_names",
    "render_table",
    "run_suite",
    "wilson",
]

DEFAULT_N = 200
"""Injections per fault type, as in the paper."""
WINDOW = 10
"""A cycling run counts as halted when it stops within this many worker calls of the onset
(the onset call included). Every system's step budget (``MAX_STEPS``) is far beyond it, so a run
stopped only by its budget is not halted."""
Z95 = 1.959963984540054


class FaultsError(UsageError, ValueError):
    """Bad options for the suite (unknown system or fault, N below 1); the message says which."""


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``k`` successes in ``n`` trials (default 95%).

    InvalidInput (a ValueError) unless ``0 <= k <= n`` and ``n >= 1``."""
    if n < 1 or k < 0 or k > n:
        raise InvalidInput(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    p = k / n
    z2 = z * z
    denom = 1 + z2 / n
    center = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return max(0.0, center - half), min(1.0, center + half)


@dataclass
class Cell:
    """One system under one fault type: ``k`` of ``n`` injections contaminated the committed
    state (``metric == "contamination"``) or, for cycles, halted within the window
    (``metric == "halt"``); runs that raised are in ``errors`` and not in ``n``."""

    system: str
    fault: str
    metric: str
    k: int = 0
    n: int = 0
    errors: int = 0
    first_error: str | None = None
    completed: int = 0
    end_reasons: Counter[str] = field(default_factory=Counter)
    decisions: Counter[str] = field(default_factory=Counter)
    variants: dict[str, list[int]] = field(default_factory=dict)
    steps_after_onset: list[int] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def rate(self) -> float | None:
        """k / n (None when no run finished)."""
        return self.k / self.n if self.n else None

    @property
    def ci95(self) -> tuple[float, float] | None:
        """The Wilson 95% interval of the rate (None when no run finished)."""
        return wilson(self.k, self.n) if self.n else None

    def add(self, injection: Injection, outcome: SystemOutcome) -> None:
        """Score one run."""
        if injection.fault == CYCLE:
            if outcome.onset is None:
                raise RuntimeError(f"the cycle of injection {injection.number} never started")
            after = outcome.calls - outcome.onset + 1
            hit = after <= WINDOW
            self.steps_after_onset.append(after)
        else:
            hit = contaminated(injection, outcome.committed)
        self.n += 1
        self.k += int(hit)
        self.completed += int(clean_outcome(outcome.committed))
        self.end_reasons[_reason_kind(outcome.end_reason)] += 1
        if outcome.decision is not None:
            self.decisions[outcome.decision] += 1
        tally = self.variants.setdefault(injection.variant, [0, 0])
        tally[0] += int(hit)
        tally[1] += 1

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        ci = self.ci95
        out: dict[str, Any] = {
            "metric": self.metric,
            "k": self.k,
            "n": self.n,
            "rate": self.rate,
            "ci95": list(ci) if ci else None,
            "errors": self.errors,
            "first_error": self.first_error,
            "clean_outcome": self.completed,
            "end_reasons": dict(sorted(self.end_reasons.items())),
            "decisions": dict(sorted(self.decisions.items())),
            "variants": {v: {"k": kn[0], "n": kn[1]} for v, kn in sorted(self.variants.items())},
            "seconds": round(self.seconds, 3),
        }
        if self.steps_after_onset:
            s = sorted(self.steps_after_onset)
            out["calls_after_onset"] = {"min": s[0], "median": s[len(s) // 2], "max": s[-1]}
        return out


def _reason_kind(reason: str) -> str:
    """An end reason without its run-specific details (circuit reasons name versions)."""
    if reason.startswith("circuit: "):
        text = reason[len("circuit: ") :]
        for kind in ("state cycle", "stuck", "consecutive invalid", "consecutive no-op", "budget"):
            if kind in text:
                return f"circuit: {kind}"
        return "circuit"
    return reason


@dataclass
class SuiteReport:
    """The whole suite: the options, the systems run and skipped (with why), and the cells."""

    n: int
    seed: int
    systems: list[str]
    faults: list[str]
    store: str
    skipped: dict[str, str] = field(default_factory=dict)
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form (``--json``, ``--out``)."""
        return {
            "n": self.n,
            "seed": self.seed,
            "window": WINDOW,
            "max_steps": MAX_STEPS,
            "store": self.store,
            "systems": self.systems,
            "faults": self.faults,
            "skipped": self.skipped,
            "results": {
                s: {f: self.cells[(s, f)].to_json() for f in self.faults if (s, f) in self.cells} for s in self.systems
            },
        }


def parse_names(text: str | None, known: Sequence[str], what: str) -> list[str]:
    """A comma-separated list of names from ``known`` (None or "all": all of them, in ``known``
    order); FaultsError naming the unknown ones."""
    if text is None or text.strip() in ("", "all"):
        return list(known)
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise FaultsError(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    return [k for k in known if k in names]


Progress = Callable[[str], None]


async def _one(system: str, injection: Injection, store: Any) -> SystemOutcome:
    if system == "slateboard":
        return await run_slateboard(injection, store)
    if system == "json_control":
        return await run_json_control(injection)
    if system == "loomflow":
        return await run_loomflow(injection)
    return await run_langgraph(injection)


async def run_suite(
    n: int = DEFAULT_N,
    seed: int = 0,
    systems: Sequence[str] = SYSTEMS,
    faults: Sequence[str] = FAULTS,
    *,
    store: str = "memory://",
    progress: Progress | None = None,
) -> SuiteReport:
    """Run ``n`` injections of each fault on each system (same injections for every system).

    Systems whose packages are missing are skipped with the reason in ``skipped``; slateboard's
    boards go to ``store``. FaultsError for ``n < 1`` or unknown names."""
    from slateboard.stores import open_store

    if n < 1:
        raise FaultsError(f"--n must be at least 1, got {n}")
    systems = parse_names(",".join(systems), SYSTEMS, "system")
    faults = parse_names(",".join(faults), FAULTS, "fault")
    report = SuiteReport(n, seed, [], list(faults), store)
    for system in systems:
        why = missing(system)
        if why:
            report.skipped[system] = why
            if progress:
                progress(f"{system} skipped: {why}")
            continue
        report.systems.append(system)
    opened = await open_store(store) if "slateboard" in report.systems else None
    try:
        for system in report.systems:
            for fault in faults:
                cell = Cell(system, fault, "halt" if fault == CYCLE else "contamination")
                started = time.perf_counter()
                for i in range(n):
                    injection = make_injection(fault, i, seed)
                    try:
                        outcome = await _one(system, injection, opened)
                    except Exception as exc:  # a peer's crash is data, not the end of the suite
                        cell.errors += 1
                        cell.first_error = cell.first_error or f"{type(exc).__name__}: {exc}"[:300]
                        continue
                    cell.add(injection, outcome)
                cell.seconds = time.perf_counter() - started
                report.cells[(system, fault)] = cell
                if progress:
                    progress(f"{system:<12} {fault:<14} {cell.k}/{cell.n} ({cell.seconds:.1f} s)")
    finally:
        if opened is not None:
            await opened.close()
    return report


# -- output ---------------------------------------------------------------------------------------
_LABELS = {
    "invalid_json": "Invalid JSON",
    "bad_path_type": "Bad path/type",
    "unauthorised": "Unauthorised write",
    "false_claim": "False claim",
    "cycle": "Cycle halt",
}
_SYSTEM_LABELS = {
    "slateboard": "slateboard",
    "loomflow": "plain blackboard (loomflow)",
    "json_control": "structured JSON control",
    "langgraph": "LangGraph",
}


def _cell_text(cell: Cell | None) -> str:
    if cell is None or cell.rate is None or cell.ci95 is None:
        return "-" if cell is None else f"all {cell.errors} runs failed"
    lo, hi = cell.ci95
    text = f"{cell.k}/{cell.n} = {cell.rate:.2f} [{lo:.2f}, {hi:.2f}]"
    return text + (f" ({cell.errors} failed)" if cell.errors else "")


def render_table(report: SuiteReport, file: TextIO) -> None:
    """Print the Table 1 reproduction (and how slateboard decided on each faulty reply)."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=file, highlight=False, width=max(120, 40 + 34 * len(report.systems)))
    table = Table(
        title=(
            f"Fault injection, {report.n} per fault type (seed {report.seed}): share present in the committed state "
            f"(cycle: share halted within {WINDOW} calls), Wilson 95% CI"
        ),
        title_justify="left",
    )
    table.add_column("fault", no_wrap=True)
    for s in report.systems:
        table.add_column(_SYSTEM_LABELS.get(s, s), no_wrap=True)
    for f in report.faults:
        table.add_row(_LABELS.get(f, f), *(_cell_text(report.cells.get((s, f))) for s in report.systems))
    console.print(table)
    if "slateboard" in report.systems:
        how = Table(title="slateboard: what became of the faulty reply, and how runs ended", title_justify="left")
        how.add_column("fault", no_wrap=True)
        how.add_column("faulty proposal (outcome:stage)")
        how.add_column("run ended")
        how.add_column("clean result", no_wrap=True)
        for f in report.faults:
            cell = report.cells.get(("slateboard", f))
            if cell is None:
                continue
            decided = ", ".join(f"{k} {v}" for k, v in cell.decisions.most_common()) or "-"
            ended = ", ".join(f"{k} {v}" for k, v in cell.end_reasons.most_common())
            how.add_row(_LABELS.get(f, f), decided, ended, f"{cell.completed}/{cell.n}")
        console.print(how)
    for system, why in report.skipped.items():
        # markup=False: the reason names pip extras such as 'slateboard-eval[peers]', which rich
        # would otherwise take for a markup tag and drop.
        console.print(f"{system} skipped: {why}", markup=False)


def emit(report: SuiteReport, *, as_json: bool, out: Path | None, stdout: TextIO) -> None:
    """Print the report (table or JSON) and write its JSON to ``out`` when given."""
    data = report.to_json()
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    if as_json:
        stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        render_table(report, stdout)
        if out is not None:
            stdout.write(f"JSON written to {out}\n")


def _stderr(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """``python benchmarks/faults.py``: the same options as ``slateboard faults``."""
    ap = argparse.ArgumentParser(prog="faults", description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--n", type=int, default=DEFAULT_N, help=f"injections per fault type (default {DEFAULT_N})")
    ap.add_argument("--seed", type=int, default=0, help="seed of the injections (default 0)")
    ap.add_argument("--systems", default=None, help=f"comma-separated, from: {', '.join(SYSTEMS)} (default all)")
    ap.add_argument("--faults", default=None, help=f"comma-separated, from: {', '.join(FAULTS)} (default all)")
    ap.add_argument("--store", default="memory://", help="store URL for slateboard's boards (default memory://)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of the table")
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON to this file")
    args = ap.parse_args(argv)
    try:
        systems = parse_names(args.systems, SYSTEMS, "system")
        faults = parse_names(args.faults, FAULTS, "fault")
        report = asyncio.run(
            run_suite(args.n, args.seed, systems, faults, store=args.store, progress=None if args.json else _stderr)
        )
    except FaultsError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    emit(report, as_json=args.json, out=args.out, stdout=sys.stdout)
    return 0
