"""``slateboard eval scienceworld``, ``slateboard eval twx``, ``slateboard eval textworld-suite``
and ``slateboard eval report``: the suite runner of ``slateboard_eval.suites`` with its
statistics and figures."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from slateboard.cli.plugin import (
    CliError,
    CliUsageError,
    JsonOption,
    StoreOption,
    console,
    console_err,
    print_json,
    run_async,
)
from slateboard.progress import progress
from slateboard.redaction import redact

if TYPE_CHECKING:
    from slateboard.models.erring import ErrorSchedule
    from slateboard.models.pricing import PriceTable

    from ..envs.textworld import GameSpec
    from ..suites import GameRef

__all__ = [
    "ErrorKindsOption",
    "ErrorSeedOption",
    "ErrorsOption",
    "PricesOption",
    "error_schedules",
    "price_table",
    "print_error_table",
    "register",
    "textworld_specs",
]

_DEFAULT_SYSTEMS = "slateboard,langgraph,loomflow"

ModelOption = Annotated[
    str,
    typer.Option(
        "--model", "-m", metavar="MODEL", help="Model string for every system ('walkthrough' plays the gold path)."
    ),
]
StepsOption = Annotated[int, typer.Option("--steps", min=1, max=500, help="Command budget of every episode.")]
SystemsOption = Annotated[
    str, typer.Option("--systems", metavar="LIST", help="Comma-separated systems (slateboard and the peers).")
]
AblationsOption = Annotated[
    str,
    typer.Option(
        "--ablations",
        metavar="LIST",
        help="Extra slateboard settings: no-interface, no-slicing, no-contracts, no-invariants, no-circuit, json-board, plain-board, all.",
    ),
]
BudgetsOption = Annotated[
    str,
    typer.Option(
        "--budgets", metavar="LIST", help="Context-budget sweep: view budgets in characters, e.g. 500,1000,3000."
    ),
]
ResultsOption = Annotated[
    Path | None,
    typer.Option(
        "--results",
        metavar="FILE",
        help="Results file (JSON lines; resumed when it exists). Default: OUT/results.jsonl.",
    ),
]
OutOption = Annotated[Path | None, typer.Option("--out", metavar="DIR", help="Where report.json and the figures go.")]
WorkersOption = Annotated[
    int, typer.Option("--workers", min=1, max=64, help="Episodes played at once, in separate processes.")
]
PlotsOption = Annotated[bool, typer.Option("--plots/--no-plots", help="Write the PNG figures.")]
BlueprintOption = Annotated[
    str,
    typer.Option(
        "--blueprint",
        metavar="SOURCES",
        help=(
            "Blueprint sources of slateboard: fixed (the text_actor template, always played: the reference) "
            "and/or generated (designed by the Architect from each game's task; with -m walkthrough a "
            "recorded design), e.g. fixed,generated."
        ),
    ),
]


ErrorsOption = Annotated[
    str,
    typer.Option(
        "--errors",
        metavar="P",
        help="Model error rate per call, 0 to 1 (the erring model); a comma list such as 0,0.1,0.2,0.3 is a sweep.",
    ),
]
ErrorSeedOption = Annotated[
    int, typer.Option("--error-seed", min=0, help="Seed of the error schedule (the same seed, the same errors).")
]
ErrorKindsOption = Annotated[
    str,
    typer.Option(
        "--error-kinds",
        metavar="LIST",
        help="Error kinds: malformed, hallucinated, false_claim, repeat, off_contract, or all.",
    ),
]


PricesOption = Annotated[
    Path | None,
    typer.Option(
        "--prices",
        metavar="FILE",
        help=(
            'Price table (JSON: {"MODEL": {"input": $, "output": $}}, dollars per million tokens; "*": any model) '
            "for the cost columns; default: local and walkthrough cost 0, other models genai-prices or unknown."
        ),
        show_default=False,
    ),
]


def price_table(path: Path | None) -> PriceTable:
    """The price table ``--prices`` names (the built-in rules without it); a usage CliError
    naming the file and the bad entry for a table that cannot be read or is not accepted."""
    from slateboard.errors import InvalidInput

    from ..cost import load_prices

    try:
        return load_prices(path)
    except InvalidInput as exc:
        raise CliUsageError(f"--prices: {exc}") from None


def error_schedules(errors: str, seed: int, kinds: str) -> list[ErrorSchedule]:
    """The error schedules the ``--errors``/``--error-seed``/``--error-kinds`` options ask for,
    one per rate; none (the model's replies passed through) for the default ``--errors 0``. A
    usage CliError naming the option for a bad rate or kind."""
    from slateboard.models.erring import ErrorSchedule, parse_error_kinds, parse_error_rates

    try:
        rates = parse_error_rates(errors)
    except ValueError as exc:
        raise CliUsageError(f"--errors: {exc}") from exc
    try:
        chosen = parse_error_kinds(kinds)
    except ValueError as exc:
        raise CliUsageError(f"--error-kinds: {exc}") from exc
    if rates == (0.0,):
        return []
    return [ErrorSchedule(rate, seed=seed, kinds=chosen) for rate in rates]


def print_error_table(entries: list[dict[str, Any]], *, title: str) -> None:
    """One line per entry (``system``, ``setting``, ``model_errors``) and error kind: injected,
    caught (with the kernel stages), harmful, and harmful that reached the game."""
    table = Table(title=title, box=None, pad_edge=False)
    for name in ("system", "setting", "kind", "injected", "caught", "harmful", "to the game", "caught at"):
        table.add_column(name, no_wrap=True)
    for e in entries:
        for kind, t in (e.get("model_errors") or {}).items():
            if not t.get("injected"):
                continue
            stages = ", ".join(f"{k} {v}" for k, v in sorted(t.get("stages", {}).items())) or "-"
            table.add_row(
                str(e["system"]), str(e.get("setting", "")), kind, str(t["injected"]), str(t["caught"]),
                str(t["harmful"]), str(t["to_game"]), stages,
            )  # fmt: skip
    console().print(table)


@dataclass(frozen=True)
class _Matrix:
    """The options every suite command shares: which systems, settings and budgets make the
    episode matrix, where results and the report go, and how it is played."""

    systems: str
    ablations: str
    budgets: str
    blueprint: str
    results: Path | None
    out: Path | None
    workers: int
    plots: bool
    errors: str
    error_seed: int
    error_kinds: str
    prices: Path | None
    store: str | None
    as_json: bool


# The typer parameters of _Matrix, in --help order: (name, annotation, default).
_MATRIX_OPTIONS: tuple[tuple[str, Any, Any], ...] = (
    ("systems", SystemsOption, _DEFAULT_SYSTEMS),
    ("ablations", AblationsOption, ""),
    ("budgets", BudgetsOption, ""),
    ("blueprint", BlueprintOption, "fixed"),
    ("results", ResultsOption, None),
    ("out", OutOption, None),
    ("workers", WorkersOption, 1),
    ("plots", PlotsOption, True),
    ("errors", ErrorsOption, "0"),
    ("error_seed", ErrorSeedOption, 0),
    ("error_kinds", ErrorKindsOption, "all"),
    ("prices", PricesOption, None),
    ("store", StoreOption, None),
    ("as_json", JsonOption, False),
)


def _with_matrix(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` (whose last parameter is ``matrix: _Matrix``) as a typer command taking the
    shared suite options in place of ``matrix``: each suite declares only its own options and
    the rest is defined once, so the suites' option names, defaults and help cannot drift."""
    own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "matrix"]
    shared = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)
        for name, annotation, default in _MATRIX_OPTIONS
    ]

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> None:
        matrix = _Matrix(**{name: kwargs.pop(name) for name, _, _ in _MATRIX_OPTIONS})
        command(**kwargs, matrix=matrix)

    params = [*own, *shared]
    # typer reads the signature and the resolved annotations of what it registers.
    wrapper.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


def _ints(text: str, what: str) -> list[int]:
    try:
        return [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise CliUsageError(f"{what}: a comma-separated list of integers, got {text!r}") from None


def _names(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def _settings(text: str) -> list[str]:
    from ..ablations import ABLATIONS, CONTROLS, parse_setting

    names = _names(text)
    if "all" in names:
        names = [n for n in names if n != "all"] + [*ABLATIONS, *CONTROLS]
    try:
        return list(dict.fromkeys(parse_setting(n).name for n in names))
    except ValueError as exc:
        raise CliUsageError(f"--ablations: {exc}") from exc


def _sources(text: str) -> list[str]:
    """The ``--blueprint`` sources as extra settings: ``generated`` adds the ``generated``
    setting (the fixed blueprint is ``full``, played anyway as the paired reference)."""
    from ..generated import BLUEPRINT_SOURCES, FIXED

    names = [n.lower() for n in _names(text)] or [FIXED]
    unknown = [n for n in names if n not in BLUEPRINT_SOURCES]
    if unknown:
        raise CliUsageError(f"--blueprint: unknown source {unknown[0]!r} (sources: {', '.join(BLUEPRINT_SOURCES)})")
    return [n for n in dict.fromkeys(names) if n != FIXED]


def _systems(text: str) -> list[str]:
    from ..suites import missing_system

    chosen = list(dict.fromkeys(n.lower() for n in _names(text)))
    if not chosen:
        raise CliUsageError("--systems: no system named")
    for name in chosen:
        why = missing_system(name)
        if why is not None:
            raise (CliUsageError if why.startswith("unknown") else CliError)(f"--systems: {why}")
    return chosen


def textworld_specs(tier: str, games: int | None, option: str) -> list[GameSpec]:
    """The generated TextWorld games of ``tier`` (its first ``games`` when given), checked before
    anything is generated: a usage CliError naming ``option`` for an unknown tier or count, a
    CliError when TextWorld is not installed."""
    from ..envs.textworld import game_set, textworld_available

    try:
        specs = game_set(tier=tier, games=games)
    except ValueError as exc:
        raise CliUsageError(f"{option}: {exc}") from exc
    if not textworld_available():
        raise CliError("TextWorld is not installed: pip install 'slateboard-eval[textworld]'")
    return specs


def _run(
    suite: str,
    games: list[GameRef],
    *,
    model: str,
    steps: int,
    matrix: _Matrix,
) -> None:
    from ..report import write_report
    from ..suites import matrix_jobs, run_matrix

    chosen = _systems(matrix.systems)
    settings = list(dict.fromkeys([*_settings(matrix.ablations), *_sources(matrix.blueprint)]))
    sweep = _ints(matrix.budgets, "--budgets")
    schedules = error_schedules(matrix.errors, matrix.error_seed, matrix.error_kinds)
    table = price_table(matrix.prices)
    if model != "walkthrough":
        from slateboard.models import resolve_model

        resolve_model(model)  # a bad model string fails here, before any game starts
    root = matrix.out or Path("eval-results") / suite
    path = matrix.results or root / "results.jsonl"
    games = _pinned(games, path.with_suffix(".games.json"))
    try:
        jobs = matrix_jobs(
            games, systems=chosen, model=model, steps=steps, settings=settings, budgets=sweep, errors=schedules
        )
    except ValueError as exc:
        raise CliUsageError(str(exc)) from exc
    err = console_err()
    err.print(f"{suite}: {len(games)} game(s), {len(jobs)} episode(s); results in {path}")

    head = f"eval {suite}: {len(jobs)} episode(s), model {redact(model)}"
    with progress(f"{head}: 0/{len(jobs)} done") as line:
        played = 0

        def report_row(row: dict[str, Any]) -> None:
            nonlocal played
            played += 1
            what = row["error"] or f"{row['outcome']}, {row['commands']} steps, {row['tokens']} tokens"
            line.print(f"{row['game']} {row['system']} ({row['setting']}): {what}")
            line.update(f"{head}: {played}/{len(jobs)} done")

        rows = run_async(
            lambda: run_matrix(jobs, path, store_url=matrix.store, workers=matrix.workers, on_row=report_row)
        )
        line.update(f"eval {suite}: writing the report under {root}")
        report = write_report(
            rows,
            root,
            plots=matrix.plots,
            prices=table,
            meta={
                "suite": suite,
                "model": redact(model),
                "steps": steps,
                "blueprint": matrix.blueprint,
                **(
                    {
                        "error_rates": ",".join(f"{sch.rate:g}" for sch in schedules),
                        "error_seed": matrix.error_seed,
                        "error_kinds": ",".join(schedules[0].kinds),
                    }
                    if schedules
                    else {}
                ),
            },
        )
    if matrix.as_json:
        print_json({k: v for k, v in report.items() if k != "rows"})
    else:
        _print_report(report, root)
    failed = [r for r in rows if r.get("error")]
    if failed:
        first = failed[0]
        raise CliError(f"{len(failed)} episode(s) failed; first: {first['game']} {first['system']}: {first['error']}")


def _pinned(games: list[GameRef], file: Path) -> list[GameRef]:
    """The games with their gold paths pinned, reusing the ones ``file`` kept from an earlier
    run of the same results file (a resumed sweep follows the same paths)."""
    import json

    from ..suites import GameRef, pin_gold

    kept: dict[str, Any] = {}
    if file.is_file():
        kept = {g["name"]: g for g in json.loads(file.read_text(encoding="utf-8"))}
    known = [GameRef.from_json(kept[g.name]) if g.name in kept else g for g in games]
    with progress(f"eval: pinning the gold paths of {len(known)} game(s)"):
        pinned = run_async(lambda: pin_gold(known))
    file.parent.mkdir(parents=True, exist_ok=True)
    merged = {**kept, **{g.name: g.to_json() for g in pinned}}
    file.write_text(json.dumps(list(merged.values()), indent=1) + "\n", encoding="utf-8")
    return pinned


def _iv(iv: dict[str, Any], fmt: str) -> str:
    if iv.get("value") is None:
        return "-"
    lo, hi = iv.get("low"), iv.get("high")
    span = f" [{format(lo, fmt)}, {format(hi, fmt)}]" if lo is not None and hi is not None else ""
    return format(iv["value"], fmt) + span


def _print_report(report: dict[str, Any], root: Path) -> None:
    out = console()
    from slateboard.models.pricing import format_cost

    table = Table(title="success (Wilson 95%), steps, tokens and tokens per success (bootstrap 95%), cost")
    rated = any(s.get("error_rate") for s in report["systems"])
    columns = ("suite", "system", "setting", "wins", "success", "steps", "tokens/success", "cost", "cost/success")
    for name in (*columns, "verified"):
        table.add_column(name, no_wrap=True)
    for s in report["systems"]:
        table.add_row(
            s["suite"],
            s["system"],
            f"{s['setting']} p={s.get('error_rate') or 0:g}" if rated else s["setting"],
            f"{s['wins']}/{s['games']}",
            _iv(s["success"], ".2f"),
            _iv(s["steps"], ".1f"),
            _iv(s["tokens_per_success"], ",.0f"),
            format_cost(s.get("cost_usd")),
            "-" if not s["wins"] else format_cost(s.get("cost_per_success")),
            "no" if s["unverified"] else "yes",
        )
    out.print(table)
    if report["comparisons"]:
        comp = Table(title="paired against slateboard/full (bootstrap 95%)")
        for name in ("suite", "system", "setting", "pairs", "success delta", "steps delta", "tokens/success ratio"):
            comp.add_column(name, no_wrap=True)
        for c in report["comparisons"]:
            comp.add_row(
                c["suite"],
                c["system"],
                f"{c['setting']} p={c.get('error_rate') or 0:g}" if rated else c["setting"],
                str(c["pairs"]),
                _iv(c["success_delta"], "+.2f"),
                _iv(c["steps_delta"], "+.1f"),
                _iv(c["tokens_per_success_ratio"], ".2f"),
            )
        out.print(comp)
    if rated:
        print_error_table(
            [{**s, "setting": f"{s['setting']} p={s.get('error_rate') or 0:g}"} for s in report["systems"]],
            title="model errors: what became of them",
        )
    out.print(
        f"report: {root / 'report.json'}" + (f"; figures: {', '.join(report['figures'])}" if report["figures"] else "")
    )


def register(app: typer.Typer) -> None:
    """Add the suite commands to ``app`` (the ``eval`` group)."""

    @app.command("scienceworld")
    @_with_matrix
    def scienceworld_command(
        model: ModelOption = "local",
        steps: StepsOption = 60,
        tasks: Annotated[
            str, typer.Option("--tasks", metavar="LIST", help="ScienceWorld task names (default: the CI set).")
        ] = "",
        variations: Annotated[str, typer.Option("--variations", metavar="LIST", help="Variation indices.")] = "0",
        simplification: Annotated[
            str, typer.Option("--simplification", metavar="STR", help="ScienceWorld simplifications, e.g. easy.")
        ] = "",
        full: Annotated[bool, typer.Option("--full", help="The broader task set instead of the CI one.")] = False,
        *,
        matrix: _Matrix,
    ) -> None:
        """Play ScienceWorld task variations with every system; report with intervals and figures."""
        from ..envs.scienceworld import CI_TASKS, FULL_TASKS, scienceworld_missing, task_specs
        from ..suites import GameRef

        why = scienceworld_missing()
        if why is not None:
            raise CliError(why)
        names = _names(tasks) or list(FULL_TASKS if full else CI_TASKS)
        specs = task_specs(names, _ints(variations, "--variations"), simplification)
        games = [GameRef("scienceworld", s.name, s.variation, s.to_json()) for s in specs]
        _run("scienceworld", games, model=model, steps=steps, matrix=matrix)

    @app.command("twx")
    @_with_matrix
    def twx_command(
        model: ModelOption = "local",
        steps: StepsOption = 30,
        games: Annotated[
            str, typer.Option("--games", metavar="LIST", help="Game labels or game names (default: the CI set).")
        ] = "",
        seeds: Annotated[str, typer.Option("--seeds", metavar="LIST", help="Game seeds.")] = "1",
        full: Annotated[bool, typer.Option("--full", help="The full game set instead of the CI one.")] = False,
        *,
        matrix: _Matrix,
    ) -> None:
        """Play TextWorldExpress games (CookingWorld, TWC, Coin Collector, ...) with every system."""
        from ..envs.twx import game_specs, twx_missing
        from ..suites import GameRef

        why = twx_missing()
        if why is not None:
            raise CliError(why)
        try:
            specs = game_specs(full=full, only=_names(games))
        except ValueError as exc:
            raise CliUsageError(f"--games: {exc}") from exc
        refs = [GameRef("twx", s.name(seed), seed, s.to_json()) for s in specs for seed in _ints(seeds, "--seeds")]
        _run("twx", refs, model=model, steps=steps, matrix=matrix)

    @app.command("textworld-suite")
    @_with_matrix
    def textworld_suite_command(
        model: ModelOption = "local",
        steps: Annotated[int, typer.Option("--steps", min=1, max=200, help="Command budget of every episode.")] = 30,
        tier: Annotated[str, typer.Option("--tier", metavar="TIER", help="Generated set: ci, full or hard.")] = "ci",
        games: Annotated[
            int | None,
            typer.Option("--games", min=1, help="Play only the first N games of the set.", show_default=False),
        ] = None,
        seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the generated games.")] = 1234,
        cache: Annotated[
            Path | None, typer.Option("--cache", metavar="DIR", help="Where generated games are kept.")
        ] = None,
        *,
        matrix: _Matrix,
    ) -> None:
        """Play the generated TextWorld games on the suite runner (ablations, budgets, intervals,
        figures), like the other suites; ``eval textworld`` is TextWorld's own per-component report."""
        from ..envs.textworld import TextWorldMissing, generate_games
        from ..suites import GameRef

        specs = textworld_specs(tier, games, "--tier/--games")
        try:
            files = generate_games(specs, seed=seed, cache_dir=cache)
        except (TextWorldMissing, RuntimeError) as exc:
            raise CliError(str(exc)) from exc
        refs = [GameRef("textworld", f.name, f.seed, {"path": str(f.path)}, f.walkthrough) for f in files]
        _run("textworld", refs, model=model, steps=steps, matrix=matrix)

    @app.command("report")
    def report_command(
        results: Annotated[Path, typer.Argument(metavar="RESULTS", help="A results file (JSON lines).")],
        out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Where report.json and the figures go.")],
        plots: PlotsOption = True,
        prices: PricesOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """Recompute the statistics, costs and figures of a results file (of any suites)."""
        from ..report import write_report
        from ..suites import load_results

        table = price_table(prices)
        rows = load_results(results)
        if not rows:
            raise CliError(f"no results in {results}")
        with progress(f"eval report: statistics and figures of {len(rows)} result(s) into {out}"):
            report = write_report(rows, out, plots=plots, meta={"results": str(results)}, prices=table)
        if as_json:
            print_json({k: v for k, v in report.items() if k != "rows"})
        else:
            _print_report(report, out)
