"""``slateboard eval ...``: evaluation suites (the TextWorld text-game suite)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from slateboard.cli._common import (
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
from slateboard.cli._errors import EXIT_USAGE, CliError
from slateboard.progress import progress

from ._suites import textworld_specs

if TYPE_CHECKING:
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
    counting: Annotated[
        str,
        typer.Option(
            "--counting",
            metavar="HOW",
            help="Tokens of calls without provider usage: tokenizer (the local GGUF's own vocabulary) or estimate (chars/4).",
        ),
    ] = "tokenizer",
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Play the TextWorld games with every system; report success, steps and tokens per system."""
    from ..envs import VERIFIERS
    from ..envs.textworld import TextWorldMissing, existing_games, generate_games
    from ..textworld import check_systems, parse_systems, run_suite

    try:
        chosen = parse_systems(systems)
    except ValueError as exc:
        raise CliError(f"--systems: {exc}", code=EXIT_USAGE) from exc
    if verifier not in VERIFIERS:
        raise CliError(f"--verifier: unknown mode {verifier!r} (modes: {', '.join(VERIFIERS)})", code=EXIT_USAGE)
    if counting not in ("tokenizer", "estimate"):
        raise CliError(f"--counting: unknown method {counting!r} (tokenizer, estimate)", code=EXIT_USAGE)
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

    total = len(files) * len(chosen)
    what = f"eval textworld: {len(files)} game(s) x {len(chosen)} system(s), model {model}"
    with progress(f"{what}: 0/{total} episodes") as line:
        played = 0

        def report_episode(ep: EpisodeResult) -> None:
            nonlocal played
            played += 1
            where = f" board {ep.board_id}" if ep.board_id else ""
            line.print(f"{ep.game} {ep.system}: {ep.outcome}, {ep.commands} steps, {ep.tokens} tokens{where}")
            line.update(f"{what}: {played}/{total} episodes")

        async def go() -> SuiteResult:
            async with opened_store(store) as opened:
                return await run_suite(
                    files,
                    systems=chosen,
                    model=model,
                    steps=steps,
                    store=opened,
                    seed=seed,
                    on_episode=report_episode,
                    verifier=verifier,  # checked against VERIFIERS above
                    tokenizer=tokenizer,
                )

        suite = run_async(go)
    if as_json:
        print_json(suite.to_json())
    else:
        _print_tables(suite, store)
    failed = [e for e in suite.episodes if e.error is not None]
    if failed:
        first = failed[0]
        raise CliError(f"{len(failed)} episode(s) failed; first: {first.game} {first.system}: {first.error}")


def _fmt_tps(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _print_tables(suite: SuiteResult, store: str | None) -> None:
    out = console()
    summary = Table(title=f"TextWorld: {len(suite.games)} games, model {suite.model}, budget {suite.steps} steps")
    columns = ("system", "success", "wins", "mean steps", "calls", "total tokens", "tokens/success", "overhead")
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
    for name in ("game", "system", "outcome", "steps", "walkthrough", "score", "tokens", "board"):
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
            e.board_id or "-",
        )
    out.print(episodes)
    if any(e.board_id for e in suite.episodes):
        out.print(f"inspect a board: slateboard log BOARD{store_hint(store)}")


# ScienceWorld, TextWorldExpress and the report: the generic suite runner (slateboard_eval.suites).
from ._suites import register as _register_suites  # noqa: E402

_register_suites(eval_app)
