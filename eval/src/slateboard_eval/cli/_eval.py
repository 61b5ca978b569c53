"""``slateboard eval ...``: evaluation suites (the TextWorld text-game suite)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from slateboard.cli.plugin import (
    CliError,
    CliUsageError,
    JsonOption,
    StoreOption,
    cell,
    console,
    console_err,
    opened_store,
    print_json,
    run_async,
    store_hint,
)
from slateboard.models.pricing import format_cost
from slateboard.progress import progress
from slateboard.redaction import redact

from ._suites import (
    ErrorKindsOption,
    ErrorSeedOption,
    ErrorsOption,
    PricesOption,
    error_schedules,
    price_table,
    print_error_table,
    textworld_specs,
)

if TYPE_CHECKING:
    from slateboard.models.erring import ErrorSchedule

    from ..textworld import EpisodeResult, SuiteResult

eval_app = typer.Typer(help="Evaluation suites.", no_args_is_help=True)

_DEFAULT_SYSTEMS = "slateboard,langgraph-lean,langgraph,loomflow"


@eval_app.command("textworld")
def textworld_command(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            metavar="MODEL",
            help="Model string for every system ('walkthrough' follows each game's walkthrough).",
        ),
    ] = "local",
    steps: Annotated[
        int, typer.Option("--steps", min=1, max=200, help="Command budget of every episode (environment steps).")
    ] = 20,
    games: Annotated[
        int | None, typer.Option("--games", min=1, help="Play only the first N games of the set.", show_default=False)
    ] = None,
    full: Annotated[bool, typer.Option("--full", help="The full game set instead of the CI-size one.")] = False,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the generated games.")] = 1234,
    systems: Annotated[
        str,
        typer.Option(
            "--systems",
            metavar="LIST",
            help="Comma-separated systems: slateboard, langgraph-lean, langgraph, loomflow.",
        ),
    ] = _DEFAULT_SYSTEMS,
    cache: Annotated[
        Path | None,
        typer.Option("--cache", metavar="DIR", help="Where generated games are kept (default: the user cache dir)."),
    ] = None,
    game_files: Annotated[
        list[Path] | None,
        typer.Option(
            "--game-files",
            metavar="PATH",
            help="Play these games (.z8/.ulx files with their .json, or folders of them) instead of generating a set.",
            show_default=False,
        ),
    ] = None,
    tier: Annotated[
        str,
        typer.Option("--tier", metavar="TIER", help="Generated set: ci, full or hard (tw-make custom worlds)."),
    ] = "ci",
    verifier: Annotated[
        str, typer.Option("--verifier", metavar="MODE", help="slateboard's verifier: none (default) or llm.")
    ] = "none",
    executor: Annotated[
        bool,
        typer.Option(
            "--executor/--no-executor",
            help="slateboard's executor: a fresh plan's admissible first step issued without an actor call.",
        ),
    ] = True,
    counting: Annotated[
        str,
        typer.Option(
            "--counting",
            metavar="HOW",
            help="Tokens of calls without provider usage: tokenizer (the local GGUF's own vocabulary) or estimate (chars/4).",
        ),
    ] = "tokenizer",
    errors: ErrorsOption = "0",
    error_seed: ErrorSeedOption = 0,
    error_kinds: ErrorKindsOption = "all",
    prices: PricesOption = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="DIR", help="Also write report.json there (and errors.png for a sweep)."),
    ] = None,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Play the TextWorld games with every system; report success, steps, tokens and cost per system."""
    from ..envs import VERIFIERS
    from ..envs.textworld import TextWorldMissing, existing_games, generate_games
    from ..textworld import check_systems, parse_systems, run_suite

    try:
        chosen = parse_systems(systems)
    except ValueError as exc:
        raise CliUsageError(f"--systems: {exc}") from exc
    schedules = error_schedules(errors, error_seed, error_kinds)
    table = price_table(prices)
    if verifier not in VERIFIERS:
        raise CliUsageError(f"--verifier: unknown mode {verifier!r} (modes: {', '.join(VERIFIERS)})")
    if counting not in ("tokenizer", "estimate"):
        raise CliUsageError(f"--counting: unknown method {counting!r} (tokenizer, estimate)")
    if full:
        tier = "full"
    specs = textworld_specs(tier, games, "--games")
    try:
        check_systems(chosen)
    except RuntimeError as exc:
        raise CliError(str(exc)) from exc
    if model != "walkthrough":
        from slateboard.models import resolve_model

        resolve_model(model)  # a bad model string fails here, before any game is generated
    err = console_err()
    try:
        if game_files:
            files = existing_games(game_files)
            if games is not None:
                files = files[:games]
        else:
            err.print(f"generating {len(specs)} game(s) (seed {seed}) ...")
            with progress(f"eval textworld: generating {len(specs)} game(s) (seed {seed})"):
                files = generate_games(specs, seed=seed, cache_dir=cache)
    except (TextWorldMissing, FileNotFoundError) as exc:
        raise CliError(str(exc)) from exc
    except RuntimeError as exc:
        raise CliError(str(exc)) from exc
    tokenizer = None
    if counting == "tokenizer":
        from slateboard.models.errors import ModelConfigError
        from slateboard.models.local import GGUFTokenCounter

        try:
            tokenizer = GGUFTokenCounter()
        except ModelConfigError as exc:
            err.print(f"no tokenizer ({exc}); calls without provider usage are estimated (chars/4)")

    total = len(files) * len(chosen) * max(1, len(schedules))
    what = f"eval textworld: {len(files)} game(s) x {len(chosen)} system(s), model {redact(model)}"
    if schedules:
        what += f", error rate(s) {', '.join(f'{s.rate:g}' for s in schedules)}"
    with progress(f"{what}: 0/{total} episodes") as line:
        played = 0

        def report_episode(ep: EpisodeResult) -> None:
            nonlocal played
            played += 1
            where = f" board {ep.board_id}" if ep.board_id else ""
            line.print(
                f"{ep.game} {ep.system}: {ep.outcome}, {ep.commands} steps, {ep.tokens} tokens,"
                f" {format_cost(ep.cost_usd)}{where}"
            )
            line.update(f"{what}: {played}/{total} episodes")

        runs: list[ErrorSchedule | None] = [*schedules] or [None]

        async def go() -> list[SuiteResult]:
            async with opened_store(store) as opened:
                return [
                    await run_suite(
                        files,
                        systems=chosen,
                        model=model,
                        steps=steps,
                        store=opened,
                        seed=seed,
                        on_episode=report_episode,
                        verifier=verifier,  # checked against VERIFIERS above
                        tokenizer=tokenizer,
                        errors=schedule,
                        prices=table,
                        executor=executor,
                    )
                    for schedule in runs
                ]

        suites = run_async(go)
    report = suites[0].to_json() if len(suites) == 1 else sweep_json(suites, out)
    if out is not None:
        write_json_report(report, out)
    if as_json:
        print_json(report)
    elif len(suites) == 1:
        _print_tables(suites[0], store)
        if suites[0].errors is not None:
            _print_errors(report["systems"])
    else:
        _print_sweep(report)
    failed = [e for suite in suites for e in suite.episodes if e.error is not None]
    if failed:
        first = failed[0]
        raise CliError(f"{len(failed)} episode(s) failed; first: {first.game} {first.system}: {first.error}")


def sweep_json(suites: list[SuiteResult], out: Path | None) -> dict[str, Any]:
    """The JSON report of an error-rate sweep: every run's ``systems`` rows (with their
    ``rate``), the sweep's statistics (``slateboard_eval.erring.error_sweep``), every episode
    (with its ``rate``) and, with ``out``, the figure written there (``errors.png``)."""
    from ..erring import error_sweep
    from ..plots import write_error_sweep_plot

    first = suites[0]
    runs = [(s.errors.rate if s.errors else 0.0, [e.to_json() for e in s.episodes]) for s in suites]
    sweep = error_sweep(runs)
    figures = [write_error_sweep_plot(sweep, out).name] if out is not None else []
    return {
        "model": redact(first.model),
        "steps": first.steps,
        "seed": first.seed,
        "verifier": first.verifier,
        "executor": first.executor,
        "errors": {
            "rates": sweep["rates"],
            "seed": first.errors.seed if first.errors else 0,
            "kinds": list(first.errors.kinds) if first.errors else [],
        },
        "systems": [
            {**row, "error_rate": rate}
            for (rate, _), s in zip(runs, suites, strict=True)
            for row in s.to_json()["systems"]
        ],
        "sweep": sweep,
        "figures": figures,
        "games": [g.to_json() for g in first.games],
        "episodes": [{**e, "error_rate": rate} for rate, eps in runs for e in eps],
        "seconds": round(sum(s.seconds for s in suites), 3),
    }


def write_json_report(report: dict[str, Any], out: Path) -> Path:
    """Write ``report`` to ``out/report.json`` (the folder is made) and return its path."""
    import json

    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.json"
    path.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def _print_errors(systems: list[dict[str, Any]]) -> None:
    print_error_table([{**s, "setting": "full"} for s in systems], title="model errors: what became of them")


def _print_sweep(report: dict[str, Any]) -> None:
    out = console()
    table = Table(title="when the model errs: success (Wilson 95%), tokens per success (bootstrap 95%), cost")
    columns = ("system", "p", "wins", "success", "tokens/success", "slateboard tps / this", "cost/success")
    for name in (*columns, "off-policy"):
        table.add_column(name, no_wrap=True)
    for e in report["sweep"]["systems"]:
        ratio = e.get("reference_tps_ratio")
        table.add_row(
            e["system"],
            f"{e['error_rate']:g}",
            f"{e['wins']}/{e['games']}",
            _iv(e["success"], ".2f"),
            _iv(e["tokens_per_success"], ",.0f"),
            "-" if ratio is None else _iv(ratio, ".2f"),
            "-" if not e["wins"] else format_cost(e.get("cost_per_success")),
            str(e["off_policy"]),
        )
    out.print(table)
    print_error_table(
        [{**e, "setting": f"p={e['error_rate']:g}"} for e in report["sweep"]["systems"]], title="model errors per kind"
    )
    if report["figures"]:
        out.print(f"figure: {', '.join(report['figures'])}")


def _iv(iv: dict[str, Any], fmt: str) -> str:
    if iv.get("value") is None:
        return "-"
    lo, hi = iv.get("low"), iv.get("high")
    span = f" [{format(lo, fmt)}, {format(hi, fmt)}]" if lo is not None and hi is not None else ""
    return format(iv["value"], fmt) + span


def _fmt_tps(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _print_tables(suite: SuiteResult, store: str | None) -> None:
    out = console()
    summary = Table(
        title=f"TextWorld: {len(suite.games)} games, model {redact(suite.model)}, budget {suite.steps} steps"
    )
    columns = (
        "system",
        "success",
        "wins",
        "mean steps",
        "calls",
        "total tokens",
        "tokens/success",
        "cost",
        "cost/success",
        "overhead",
    )
    for name in columns:
        summary.add_column(name, justify="left" if name == "system" else "right", no_wrap=True)
    for s in suite.summaries():
        share = s.overhead_share
        summary.add_row(
            s.system,
            f"{s.success:.2f}",
            f"{s.wins}/{s.games}",
            f"{s.mean_commands:.1f}",
            f"{s.calls:,}",
            f"{s.total_tokens:,}",
            _fmt_tps(s.tokens_per_success),
            format_cost(s.cost_usd),
            "-" if not s.wins else format_cost(s.cost_per_success),
            "-" if share is None else f"{share:.1%}",
        )
    out.print(summary)
    parts = Table(title="tokens per component", box=None, pad_edge=False)
    for name in ("system", "counted by", "components", "replay"):
        parts.add_column(name)
    for s in suite.summaries():
        comps = ", ".join(f"{k} {v:,}" for k, v in sorted(s.components.items(), key=lambda kv: -kv[1]))
        replay = "-" if s.verified is None else f"{s.verified}/{s.games} verified"
        parts.add_row(s.system, s.counting, comps or "-", replay)
    out.print(parts)
    episodes = Table(box=None, pad_edge=False)
    for name in ("game", "system", "outcome", "steps", "walkthrough", "score", "tokens", "cost", "board"):
        episodes.add_column(name, no_wrap=True)
    for e in suite.episodes:
        episodes.add_row(
            cell(e.game),
            e.system,
            cell(e.error or e.outcome, "red" if e.error else ("green" if e.won else "")),
            str(e.commands),
            str(e.walkthrough),
            f"{e.score}/{e.max_score}",
            f"{e.tokens:,}",
            format_cost(e.cost_usd),
            e.board_id or "-",
        )
    out.print(episodes)
    if any(e.board_id for e in suite.episodes):
        out.print(f"inspect a board: slateboard log BOARD{store_hint(store)}")


# ScienceWorld, TextWorldExpress and the report: the generic suite runner (slateboard_eval.suites).
from ._suites import register as _register_suites  # noqa: E402

_register_suites(eval_app)
