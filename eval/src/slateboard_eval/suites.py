"""A suite runner over any text environment: games x systems x settings, resumable and parallel.

* A *game* is a ``GameRef``: the suite (``scienceworld``, ``twx``, ``textworld``), its name, its
  seed (the variation for ScienceWorld) and the JSON a worker process rebuilds it from.
* A *system* is looked up by name (``system_names()``): ``slateboard`` (the text_actor board,
  under a *setting* from ``slateboard_eval.ablations``), and every peer system that
  ``slateboard_eval.peer_players`` lists in ``PEER_PLAYERS`` (the table the TextWorld suite
  uses too), so a peer added there plugs in by name; ``register_system`` adds more.
* Every episode is one JSON line in the results file, keyed by (suite, system, game, seed,
  setting). ``run_matrix`` skips the keys already there, so an interrupted sweep resumes where
  it stopped; with ``workers > 1`` episodes run in that many processes and the parent appends
  each result as it arrives (a line is written and flushed whole).

The model string ``walkthrough`` plays every system with a WalkthroughModel over the game being
played (the environment's gold path): every system must then win every game, which proves the
harness. Slateboard boards are checked by replaying their log (``verified``).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from slateboard.architect import ArchitectError
from slateboard.errors import InvalidInput
from slateboard.models import Model, resolve_model
from slateboard.models.erring import ERROR_KINDS, ErringModel, ErrorKind, ErrorSchedule
from slateboard.redaction import redact
from slateboard.stores import open_store
from slateboard.stores.base import Store

from .ablations import FULL, parse_setting, play_setting
from .envs import WALKTHROUGH_MODEL, TextEnvironment, WalkthroughModel
from .erring import WatchedEnvironment, format_for, tally_board, tally_peer
from .peer_players import PEER_PLAYERS
from .textworld_peers import missing_peer

__all__ = [
    "NO_BLUEPRINT",
    "SUITES",
    "Episode",
    "GameRef",
    "Job",
    "ResultKey",
    "SystemFn",
    "load_results",
    "make_env",
    "matrix_jobs",
    "pin_gold",
    "register_system",
    "run_job",
    "run_matrix",
    "system_names",
]

SUITES = ("scienceworld", "twx", "textworld")
NO_BLUEPRINT = "no-blueprint"
"""The outcome of a ``generated`` episode whose Architect gave no acceptable blueprint."""


@dataclass(frozen=True, slots=True)
class GameRef:
    """One game of a suite: enough to rebuild its environment in any process."""

    suite: str
    name: str
    seed: int
    spec: dict[str, Any]
    gold: int = 0
    """The gold path's length when known (0 otherwise)."""

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"suite": self.suite, "name": self.name, "seed": self.seed, "spec": self.spec, "gold": self.gold}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GameRef:
        """The GameRef of ``to_json``."""
        return cls(
            str(data["suite"]), str(data["name"]), int(data["seed"]), dict(data["spec"]), int(data.get("gold", 0))
        )


def make_env(game: GameRef, *, walkthrough: bool = False) -> TextEnvironment:
    """A fresh environment for ``game`` (InvalidInput, a ValueError, for an unknown suite);
    ``walkthrough``: it will be played by the walkthrough policy (ScienceWorld then lists the
    next gold command when its enumeration misses it, see ``envs.scienceworld``)."""
    if game.suite == "scienceworld":
        from .envs.scienceworld import ScienceWorldSpec, ScienceWorldTask

        s = game.spec
        return ScienceWorldTask(
            ScienceWorldSpec(str(s["task"]), int(s.get("variation", 0)), str(s.get("simplification", ""))),
            walkthrough_aliases=walkthrough,
        )
    if game.suite == "twx":
        from .envs.twx import TwxGame, TwxSpec

        s = game.spec
        spec = TwxSpec(str(s["game"]), str(s.get("params", "")), str(s["label"]), str(s.get("fold", "train")))
        return TwxGame(spec, game.seed, gold=s.get("gold"))
    if game.suite == "textworld":
        from .envs.textworld import TextWorldGame

        return TextWorldGame(str(game.spec["path"]), name=game.name)
    raise InvalidInput(f"unknown suite {game.suite!r} (suites: {', '.join(SUITES)})")


async def pin_gold(games: Sequence[GameRef]) -> list[GameRef]:
    """``games`` with their gold path fixed in the spec (``gold``), taken from one reset of each:
    every system and setting then follows the same winning path, so steps and tokens under the
    gold policy are paired on the same commands. Games that already carry one are kept."""
    out: list[GameRef] = []
    for game in games:
        if game.spec.get("gold") or game.suite == "textworld":
            out.append(game)
            continue
        env = make_env(game)
        try:
            await env.reset()
            gold = [str(c) for c in getattr(env, "gold", ())]
        finally:
            env.close()
        out.append(GameRef(game.suite, game.name, game.seed, {**game.spec, "gold": gold}, len(gold)))
    return out


@dataclass
class Episode:
    """What one system did on one game (the fields every system reports)."""

    won: bool
    outcome: str
    commands: int
    score: int = 0
    max_score: int = 0
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    board_id: str | None = None
    verified: bool | None = None
    notes: list[str] = field(default_factory=list)
    design_tokens: int = 0
    """Tokens the Architect spent designing the blueprint (``generated``; included in the
    tokens above)."""


SystemFn = Callable[[TextEnvironment, Any, int, Store, str], Awaitable[Episode]]
"""A system: (environment, counting model, command budget, store, setting) -> Episode. The
model is a ``CountingModel`` (it counts every call's tokens)."""

_REGISTRY: dict[str, SystemFn] = {}


def register_system(name: str, play: SystemFn) -> None:
    """Make ``play`` available as system ``name`` (replacing one of that name)."""
    _REGISTRY[name] = play


def system_names() -> list[str]:
    """Every system that can be named: slateboard, the peers in ``PEER_PLAYERS``, and the
    registered ones."""
    names = ["slateboard", *PEER_PLAYERS]
    names.extend(n for n in _REGISTRY if n not in names)
    return names


def missing_system(name: str) -> str | None:
    """Why system ``name`` cannot run here (unknown, or its package not installed), or None."""
    if name not in system_names():
        return f"unknown system {name!r} (systems: {', '.join(system_names())})"
    if name == "slateboard" or name in _REGISTRY:
        return None
    return missing_peer(name)


async def _verify(store: Store, board_id: str) -> bool:
    from slateboard.blueprint.compile import compile_blueprint
    from slateboard.kernel.replay import replay

    loaded = await store.load_board(board_id)
    records = await store.read_records(board_id)
    blueprint = compile_blueprint(loaded.blueprint, source_label=f"board {board_id}")
    return replay(blueprint, loaded.initial_state, records).ok


async def _play_slateboard(env: TextEnvironment, model: Any, steps: int, store: Store, setting: str) -> Episode:
    try:
        ep = await play_setting(
            env, store, setting=setting, model=model, max_commands=steps, name=f"{env.name} [{setting}]"
        )
    except ArchitectError as exc:
        # no acceptable design is the generated setting's failure to play, not the harness's
        return Episode(
            won=False,
            outcome=NO_BLUEPRINT,
            commands=0,
            calls=int(getattr(model, "calls", 0)),
            tokens_in=exc.usage.tokens_in,
            tokens_out=exc.usage.tokens_out,
            notes=[str(exc).splitlines()[0], *(str(i) for i in exc.issues[:5])],
            design_tokens=exc.usage.tokens_in + exc.usage.tokens_out,
        )
    usage = ep.result.usage.values()
    last = ep.last
    design = ep.design.usage if ep.design is not None else None
    return Episode(
        won=ep.won,
        outcome=ep.outcome,
        commands=ep.commands,
        score=last.score if last else 0,
        max_score=last.max_score if last else 0,
        calls=int(getattr(model, "calls", 0)),
        tokens_in=sum(u.tokens_in for u in usage),
        tokens_out=sum(u.tokens_out for u in usage),
        board_id=ep.result.board_id,
        verified=await _verify(store, ep.result.board_id),
        design_tokens=design.tokens_in + design.tokens_out if design is not None else 0,
    )


def _peer_system(name: str) -> SystemFn:
    async def play(env: TextEnvironment, model: Any, steps: int, store: Store, setting: str) -> Episode:
        peer = await PEER_PLAYERS[name](env, model, max_commands=steps)
        return Episode(
            won=bool(peer.won),
            outcome=str(peer.outcome),
            commands=int(peer.commands),
            score=peer.last.score if peer.last else 0,
            max_score=peer.last.max_score if peer.last else 0,
            calls=int(peer.calls),
            tokens_in=int(peer.tokens_in),
            tokens_out=int(peer.tokens_out),
            notes=list(peer.notes),
        )

    return play


def _system(name: str) -> SystemFn:
    if name == "slateboard":
        return _play_slateboard
    if name in _REGISTRY:
        return _REGISTRY[name]
    return _peer_system(name)


ResultKey = tuple[str, str, str, int, str, float]
"""(suite, system, game, seed, setting, error rate): what identifies a result."""


@dataclass(frozen=True, slots=True)
class Job:
    """One episode to play: a game, a system, a setting (``full`` for peers), the model string,
    the command budget and the erring model's schedule (rate 0: the replies are passed
    through)."""

    game: GameRef
    system: str
    setting: str
    model: str
    steps: int
    error_rate: float = 0.0
    error_seed: int = 0
    error_kinds: tuple[ErrorKind, ...] = ERROR_KINDS

    @property
    def key(self) -> ResultKey:
        """(suite, system, game, seed, setting, error rate): what identifies a result in the results file."""
        return (self.game.suite, self.system, self.game.name, self.game.seed, self.setting, self.error_rate)

    @property
    def schedule(self) -> ErrorSchedule | None:
        """The erring model's schedule, None at rate 0."""
        return ErrorSchedule(self.error_rate, seed=self.error_seed, kinds=self.error_kinds) if self.error_rate else None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form (what crosses to a worker process)."""
        return {
            "game": self.game.to_json(),
            "system": self.system,
            "setting": self.setting,
            "model": self.model,
            "steps": self.steps,
            "error_rate": self.error_rate,
            "error_seed": self.error_seed,
            "error_kinds": list(self.error_kinds),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Job:
        """The Job of ``to_json``."""
        kinds = tuple(k for k in ERROR_KINDS if k in data.get("error_kinds", ERROR_KINDS))
        return cls(
            GameRef.from_json(data["game"]),
            str(data["system"]),
            str(data["setting"]),
            str(data["model"]),
            int(data["steps"]),
            float(data.get("error_rate", 0.0)),
            int(data.get("error_seed", 0)),
            kinds,
        )


def record_key(row: dict[str, Any]) -> ResultKey:
    """The key of a results-file row (see Job.key; a row without ``error_rate`` was played at rate 0)."""
    return (
        str(row["suite"]),
        str(row["system"]),
        str(row["game"]),
        int(row["seed"]),
        str(row["setting"]),
        float(row.get("error_rate") or 0.0),
    )


def matrix_jobs(
    games: Sequence[GameRef],
    *,
    systems: Sequence[str],
    model: str,
    steps: int,
    settings: Sequence[str] = (FULL,),
    budgets: Sequence[int] = (),
    errors: Sequence[ErrorSchedule] = (),
) -> list[Job]:
    """The jobs of a matrix, game by game: every system under ``full``; slateboard also under
    every other setting and under ``budget=N`` for every budget of the sweep; all of it once
    per error schedule of ``errors`` (none: once, with the model's replies passed through).
    InvalidInput for an unknown setting."""
    extra = [s for s in settings if parse_setting(s).name != FULL] + [f"budget={b}" for b in budgets]
    for s in extra:
        parse_setting(s)
    schedules: list[ErrorSchedule] = list(errors) or [ErrorSchedule(0.0)]
    jobs: list[Job] = []
    for schedule in schedules:
        err = (schedule.rate, schedule.seed, schedule.kinds)
        for game in games:
            for system in systems:
                jobs.append(Job(game, system, FULL, model, steps, *err))
                if system == "slateboard":
                    jobs.extend(Job(game, system, parse_setting(s).name, model, steps, *err) for s in extra)
    return jobs


async def run_job(job: Job, store: Store, *, shared: Model | None = None) -> dict[str, Any]:
    """Play one job and return its results-file row. An episode that raises is a row with its
    error (and not won); a walkthrough job gets a WalkthroughModel over its own environment."""
    from .textworld_peers import CountingModel

    env = make_env(job.game, walkthrough=job.model == WALKTHROUGH_MODEL)
    inner: Model
    if job.model == WALKTHROUGH_MODEL:
        inner = WalkthroughModel(env)
    else:
        inner = shared if shared is not None else resolve_model(job.model)
    schedule = job.schedule
    watch: WatchedEnvironment | None = None
    erring: ErringModel | None = None
    played: TextEnvironment = env
    if schedule is not None:
        played = watch = WatchedEnvironment(env)
        episode = f"{job.game.suite}:{job.game.name}:{job.game.seed}"
        erring = ErringModel(inner, schedule, episode=episode, format=format_for(job.system), context=watch.context)
        inner = erring
    counting = CountingModel(inner)
    started = time.perf_counter()
    cpu = time.process_time()
    suite, system, game, seed, setting, rate = job.key
    row: dict[str, Any] = {"suite": suite, "system": system, "game": game, "seed": seed, "setting": setting}
    row.update({"model": redact(job.model), "steps_budget": job.steps, "gold": job.game.gold, "error_rate": rate})
    try:
        ep = await _system(job.system)(played, counting, job.steps, store, job.setting)
        if erring is not None and watch is not None and schedule is not None:
            if ep.board_id is not None:
                records = await store.read_records(ep.board_id)
                row["model_errors"] = tally_board(erring.injections, records, watch, schedule.kinds, erring.roles)
            else:
                row["model_errors"] = tally_peer(erring.injections, watch, schedule.kinds)
            row["off_policy"] = sum(watch.off_policy)
            row["error_seed"] = schedule.seed
        row.update(
            won=ep.won,
            outcome=ep.outcome,
            commands=ep.commands,
            score=ep.score,
            max_score=ep.max_score,
            calls=counting.calls,
            tokens_in=ep.tokens_in,
            tokens_out=ep.tokens_out,
            board_id=ep.board_id,
            verified=ep.verified,
            notes=ep.notes,
            design_tokens=ep.design_tokens,
            error=None,
        )
    except Exception as exc:
        row.update(
            won=False,
            outcome="error",
            commands=env.commands,
            score=0,
            max_score=0,
            calls=counting.calls,
            tokens_in=counting.tokens_in,
            tokens_out=counting.tokens_out,
            board_id=None,
            verified=None,
            notes=[],
            design_tokens=0,
            error=f"{type(exc).__name__}: {exc}",
        )
    finally:
        env.close()
    row["tokens"] = int(row["tokens_in"]) + int(row["tokens_out"])
    row["estimated_tokens"] = counting.estimated
    row["seconds"] = round(time.perf_counter() - started, 3)
    row["cpu_seconds"] = round(time.process_time() - cpu, 3)
    return row


def load_results(path: Path | str) -> list[dict[str, Any]]:
    """The rows of a results file (the last row of a key wins; a torn last line from an
    interrupted write is ignored). An absent file has no rows."""
    p = Path(path)
    if not p.is_file():
        return []
    rows: dict[ResultKey, dict[str, Any]] = {}
    for line in p.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and "suite" in row:
            rows[record_key(row)] = row
    return list(rows.values())


def _append(path: Path, row: dict[str, Any]) -> None:
    # a line torn by an interrupted write must not swallow the next row: start on a new line
    torn = False
    if path.is_file() and path.stat().st_size:
        with path.open("rb") as fh:
            fh.seek(-1, os.SEEK_END)
            torn = fh.read(1) != b"\n"
    with path.open("a", encoding="utf-8") as fh:
        fh.write(("\n" if torn else "") + json.dumps(row, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def _worker_job(payload: dict[str, Any], store_url: str | None) -> dict[str, Any]:
    """Run one job in a worker process (its own event loop and store connection)."""
    job = Job.from_json(payload)

    async def go() -> dict[str, Any]:
        store = await open_store(store_url or "memory://")
        try:
            return await run_job(job, store)
        finally:
            await store.close()

    return asyncio.run(go())


async def run_matrix(
    jobs: Iterable[Job],
    results: Path | str,
    *,
    store_url: str | None = None,
    workers: int = 1,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Play every job whose key is not in ``results`` yet, appending one row per episode, and
    return every row of the file for these jobs' keys (old and new).

    ``store_url`` is where slateboard boards go (default: an in-memory store per episode, after
    the log was verified); ``workers`` > 1 plays that many episodes at once in separate
    processes (each opens the store itself, so use SQLite or PostgreSQL to keep the boards)."""
    if workers < 1:
        raise InvalidInput(f"workers must be >= 1, got {workers}")
    path = Path(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    todo = list(jobs)
    keys = {j.key for j in todo}
    done = {record_key(r) for r in load_results(path)}
    pending = [j for j in todo if j.key not in done]

    def take(row: dict[str, Any]) -> None:
        _append(path, row)
        if on_row is not None:
            on_row(row)

    if workers == 1 or len(pending) <= 1:
        store = await open_store(store_url or "memory://")
        shared: Model | None = None
        try:
            for job in pending:
                if job.model != WALKTHROUGH_MODEL and shared is None:
                    shared = resolve_model(job.model)
                take(await run_job(job, store, shared=shared))
        finally:
            await store.close()
    else:
        with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
            futures = [asyncio.wrap_future(pool.submit(_worker_job, j.to_json(), store_url)) for j in pending]
            for finished in asyncio.as_completed(futures):
                take(await finished)
    return [r for r in load_results(path) if record_key(r) in keys]
