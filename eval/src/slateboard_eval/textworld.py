"""The TextWorld suite: every game of a seeded set, played by every system, on the same
interface, model and command budget (``slateboard eval textworld``).

Systems: ``slateboard`` (the text_actor template on a board: planner, admissible-constrained
actor, environment function worker, and with ``verifier="llm"`` an advisory verifier),
``langgraph-lean`` (a Python-routed graph), ``langgraph`` (seed 000's Appendix B.1 baseline: a
supervisor model call with subagents as tools) and ``loomflow`` (see
``slateboard_eval.textworld_peers`` and ``slateboard_eval.textworld_langgraph``). Metrics, per
system, as seed 000 (section 4.3) defines them: success rate (games won / games), environment
steps (commands executed), model calls, total tokens (prompt + completion of every model call)
and tokens per success (mean total tokens / success rate; undefined without a success), with
how the tokens were counted (``provider``, ``tokenizer:NAME`` or ``estimate:chars/4``) and
tokens per component (planner, actor, verifier, supervisor, repair/retry), and what the tokens cost
(``cost_usd``, cost per success: ``slateboard_eval.cost``; None when no price table knows the
model). For slateboard also
the protocol overhead inside its prompts (format, schema and view framing, apportioned from each
prompt's characters) and whether each board's log verifies by replay.

The model string ``walkthrough`` plays every system with a WalkthroughModel over the game being
played (it answers with the game's next winning command): with it every system must win every
game, which proves the harness rather than a model.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from slateboard.errors import InvalidInput
from slateboard.models import Model, resolve_model
from slateboard.models.erring import ErringModel, ErrorSchedule
from slateboard.models.pricing import PriceTable
from slateboard.redaction import redact
from slateboard.stores.base import Store

from .cost import cost_per_success, prices_json, tokens_cost, total_cost
from .envs import WALKTHROUGH_MODEL, TextEnvironment, VerifierMode, WalkthroughModel, play_on_board
from .envs.textworld import GameFile, TextWorldGame
from .erring import WatchedEnvironment, format_for, merge_tallies, tally_board, tally_peer
from .peer_players import PEER_PLAYERS
from .prompt_cache import CACHE_RULES
from .textworld_peers import (
    ESTIMATE_METHOD,
    PEER_SYSTEMS,
    CountingModel,
    PeerEpisode,
    TokenCounter,
    missing_peer,
)

__all__ = [
    "SYSTEMS",
    "EpisodeResult",
    "SuiteResult",
    "SystemSummary",
    "check_systems",
    "parse_systems",
    "run_suite",
]

SYSTEMS = ("slateboard", *PEER_SYSTEMS)


def parse_systems(text: str) -> list[str]:
    """The systems named in a comma-separated list, in order, without repeats; InvalidInput (a ValueError) naming
    an unknown one (and the known ones) or an empty list."""
    names: list[str] = []
    for part in text.split(","):
        name = part.strip().lower()
        if not name:
            continue
        if name not in SYSTEMS:
            raise InvalidInput(f"unknown system {name!r} (systems: {', '.join(SYSTEMS)})")
        if name not in names:
            names.append(name)
    if not names:
        raise InvalidInput(f"no system named (systems: {', '.join(SYSTEMS)})")
    return names


def check_systems(systems: Sequence[str]) -> None:
    """RuntimeError naming the first system whose package is not installed."""
    for system in systems:
        why = missing_peer(system)
        if why is not None:
            raise RuntimeError(why)


@dataclass(frozen=True, slots=True)
class EpisodeResult:
    """One game played by one system."""

    game: str
    system: str
    won: bool
    outcome: str
    commands: int
    walkthrough: int
    score: int
    max_score: int
    calls: int
    tokens_in: int
    tokens_out: int
    seconds: float
    board_id: str | None = None
    end_reason: str | None = None
    error: str | None = None
    notes: tuple[str, ...] = ()
    trace: tuple[str, ...] = ()
    """The commands the environment executed, in order."""
    counting: str = ESTIMATE_METHOD
    """How the tokens were counted (``provider``, ``tokenizer:NAME``, ``estimate:chars/4``)."""
    components: dict[str, int] = field(default_factory=dict)
    """Tokens per component (planner, actor, verifier, supervisor, repair/retry)."""
    overhead: dict[str, int] = field(default_factory=dict)
    """Prompt tokens that are protocol overhead, per kind (format, schema, view_framing)."""
    verified: bool | None = None
    """Whether the board's log verified by replay (slateboard only)."""
    model_errors: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per error kind, the errors the erring model injected and what became of them
    (``injected``, ``caught``, ``harmful``, ``to_game``, ``stages``; ``slateboard_eval.erring``);
    empty without ``--errors``."""
    off_policy: int | None = None
    """Commands executed that the walkthrough would not have sent (steps the errors cost);
    None without ``--errors``."""
    cost_usd: float | None = None
    """The episode's tokens priced with the suite's price table (``slateboard_eval.cost``): 0 for
    the local model and the walkthrough, None when no table prices the model."""
    cached_in: dict[str, int] = field(default_factory=dict)
    """Prompt tokens the modelled prompt cache serves, per rule (``any``, ``min1024``:
    ``slateboard_eval.prompt_cache``)."""
    cost_cached_usd: dict[str, float | None] = field(default_factory=dict)
    """``cost_usd`` with ``cached_in`` priced at the cached-input rate, per rule."""

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens of the episode."""
        return self.tokens_in + self.tokens_out

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "game": self.game,
            "system": self.system,
            "won": self.won,
            "outcome": self.outcome,
            "commands": self.commands,
            "walkthrough": self.walkthrough,
            "score": self.score,
            "max_score": self.max_score,
            "calls": self.calls,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "tokens": self.tokens,
            "seconds": round(self.seconds, 3),
            "board_id": self.board_id,
            "end_reason": self.end_reason,
            "error": self.error,
            "notes": list(self.notes),
            "trace": list(self.trace),
            "counting": self.counting,
            "components": dict(sorted(self.components.items())),
            "overhead": dict(sorted(self.overhead.items())),
            "verified": self.verified,
            "model_errors": self.model_errors,
            "off_policy": self.off_policy,
            "cost_usd": self.cost_usd,
            "cached_in": dict(self.cached_in),
            "cost_cached_usd": dict(self.cost_cached_usd),
        }


@dataclass(frozen=True, slots=True)
class SystemSummary:
    """A system's figures over the suite (seed 000's metrics)."""

    system: str
    games: int
    wins: int
    mean_commands: float
    total_tokens: int
    errors: int
    calls: int = 0
    counting: str = ESTIMATE_METHOD
    components: dict[str, int] = field(default_factory=dict)
    overhead: dict[str, int] = field(default_factory=dict)
    verified: int | None = None
    """Boards whose log verified by replay (None for systems without a board)."""
    model_errors: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The episodes' ``model_errors`` summed per kind (empty without ``--errors``)."""
    off_policy: int | None = None
    """Off-policy commands over the episodes (None without ``--errors``)."""
    cost_usd: float | None = None
    """The episodes' costs summed; None when any of them is unknown."""
    cached_in: dict[str, int] = field(default_factory=dict)
    """The episodes' modelled cache reads summed, per rule."""
    cost_cached_usd: dict[str, float | None] = field(default_factory=dict)
    """The episodes' costs with the modelled cache summed, per rule; None when one is unknown."""
    output_tokens: int = 0
    """Completion tokens over the episodes."""

    @property
    def success(self) -> float:
        """Games won / games played."""
        return self.wins / self.games if self.games else 0.0

    @property
    def mean_tokens(self) -> float:
        """Mean total tokens per episode."""
        return self.total_tokens / self.games if self.games else 0.0

    @property
    def tokens_per_success(self) -> float | None:
        """Mean total tokens / success rate (= total tokens / wins); None without a win."""
        return self.mean_tokens / self.success if self.wins else None

    @property
    def cost_per_success(self) -> float | None:
        """Total cost / wins (mean cost / success rate); None without a win or a known cost."""
        return cost_per_success(self.cost_usd, self.wins)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        tps = self.tokens_per_success
        return {
            "system": self.system,
            "games": self.games,
            "wins": self.wins,
            "success": round(self.success, 4),
            "mean_commands": round(self.mean_commands, 3),
            "total_tokens": self.total_tokens,
            "mean_tokens": round(self.mean_tokens, 1),
            "tokens_per_success": None if tps is None else round(tps, 1),
            "errors": self.errors,
            "calls": self.calls,
            "counting": self.counting,
            "components": dict(sorted(self.components.items())),
            "overhead": dict(sorted(self.overhead.items())),
            "overhead_share": None if self.overhead_share is None else round(self.overhead_share, 4),
            "verified": self.verified,
            "model_errors": self.model_errors,
            "off_policy": self.off_policy,
            "cost_usd": self.cost_usd,
            "cost_per_success": self.cost_per_success,
            "cached_in": dict(self.cached_in),
            "cached_share": {
                rule: round(n / self.input_tokens, 4) if self.input_tokens else None
                for rule, n in self.cached_in.items()
            },
            "cost_cached_usd": dict(self.cost_cached_usd),
            "cost_cached_per_success": {
                rule: cost_per_success(cost, self.wins) for rule, cost in self.cost_cached_usd.items()
            },
        }

    @property
    def input_tokens(self) -> int:
        """Prompt tokens over the episodes (what a prompt cache can serve)."""
        return self.total_tokens - self.output_tokens

    @property
    def overhead_share(self) -> float | None:
        """Protocol overhead (format + schema + view framing) / total tokens; None when unknown."""
        if not self.overhead or not self.total_tokens:
            return None
        return sum(self.overhead.values()) / self.total_tokens


@dataclass
class SuiteResult:
    """Everything one suite run measured."""

    model: str
    steps: int
    seed: int
    systems: list[str]
    games: list[GameFile]
    episodes: list[EpisodeResult] = field(default_factory=list)
    seconds: float = 0.0
    verifier: str = "none"
    executor: bool = True
    """Whether slateboard's board had the executor (the plan's admissible first step, no model call)."""
    errors: ErrorSchedule | None = None
    """The erring model's schedule (None: the model's replies are passed through)."""
    prices: PriceTable = field(default_factory=PriceTable)
    """The table the episodes' costs were priced with."""

    def summaries(self) -> list[SystemSummary]:
        """One summary per system, in the order the systems were asked."""
        out = []
        for system in self.systems:
            eps = [e for e in self.episodes if e.system == system]
            components: dict[str, int] = {}
            overhead: dict[str, int] = {}
            for e in eps:
                for k, v in e.components.items():
                    components[k] = components.get(k, 0) + v
                for k, v in e.overhead.items():
                    overhead[k] = overhead.get(k, 0) + v
            checked = [e.verified for e in eps if e.verified is not None]
            watched = [e.off_policy for e in eps if e.off_policy is not None]
            out.append(
                SystemSummary(
                    system=system,
                    games=len(eps),
                    wins=sum(e.won for e in eps),
                    mean_commands=sum(e.commands for e in eps) / len(eps) if eps else 0.0,
                    total_tokens=sum(e.tokens for e in eps),
                    errors=sum(e.error is not None for e in eps),
                    calls=sum(e.calls for e in eps),
                    counting="+".join(sorted({m for e in eps for m in e.counting.split("+") if m != "none"})) or "none",
                    components=components,
                    overhead=overhead,
                    verified=sum(checked) if checked else None,
                    model_errors=merge_tallies([e.model_errors for e in eps]),
                    off_policy=sum(watched) if watched else None,
                    cost_usd=total_cost(e.cost_usd for e in eps),
                    cached_in={r: sum(e.cached_in.get(r, 0) for e in eps) for r in CACHE_RULES},
                    cost_cached_usd={r: total_cost(e.cost_cached_usd.get(r) for e in eps) for r in CACHE_RULES},
                    output_tokens=sum(e.tokens_out for e in eps),
                )
            )
        return out

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form (``slateboard eval textworld --json``)."""
        return {
            "model": redact(self.model),
            "steps": self.steps,
            "seed": self.seed,
            "verifier": self.verifier,
            "executor": self.executor,
            "errors": None
            if self.errors is None
            else {"rate": self.errors.rate, "seed": self.errors.seed, "kinds": list(self.errors.kinds)},
            "prices": prices_json(self.prices),
            "systems": [s.to_json() for s in self.summaries()],
            "games": [g.to_json() for g in self.games],
            "episodes": [e.to_json() for e in self.episodes],
            "seconds": round(self.seconds, 3),
        }


async def run_suite(
    games: Sequence[GameFile],
    *,
    systems: Sequence[str],
    model: str | Model,
    steps: int,
    store: Store,
    seed: int = 0,
    on_episode: Callable[[EpisodeResult], None] | None = None,
    verifier: VerifierMode = "none",
    tokenizer: TokenCounter | None = None,
    errors: ErrorSchedule | None = None,
    prices: PriceTable | None = None,
    executor: bool = True,
) -> SuiteResult:
    """Play every game with every system (one fresh environment per episode) and measure.

    ``model`` is a model string (resolved once and shared; ``walkthrough`` for the walkthrough
    model) or a Model; ``steps`` the command budget of every episode; slateboard boards go to
    ``store`` (inspect them with ``slateboard log BOARD``) and are verified by replay; their
    text_actor variant is ``verifier`` (``none``: one model call per command), with the executor
    unless ``executor`` is False (``slateboard_eval.envs.text_actor_blueprint``). ``tokenizer``
    counts the calls whose provider reports no usage with a model's own vocabulary (else the
    chars/4 estimate, labelled as such). An episode that raises is recorded with its error (and
    counts as not won); the others still run. With ``errors`` every system's model is an
    ErringModel on that schedule (episode ``textworld:GAME``: every system meets the same errors
    at the same call indices), and each episode says what became of them (``model_errors``)
    and how many off-policy commands the game executed (``off_policy``). Each episode's tokens
    are priced with ``prices`` (default: the built-in rules) under the model string
    (``cost_usd``; ``slateboard_eval.cost``).
    """
    if steps < 1:
        raise InvalidInput(f"the command budget (steps) must be >= 1, got {steps}")
    check_systems(systems)
    label = model if isinstance(model, str) else model.name
    shared: Model | None = None
    if not (isinstance(model, str) and model == WALKTHROUGH_MODEL):
        shared = resolve_model(model)
    table = prices if prices is not None else PriceTable()
    suite = SuiteResult(
        label,
        steps,
        seed,
        list(systems),
        list(games),
        verifier=verifier,
        executor=executor,
        errors=errors,
        prices=table,
    )
    started = time.perf_counter()
    for game in games:
        for system in systems:
            result = await _episode(game, system, shared, steps, store, verifier, tokenizer, errors, executor)
            cached = {
                rule: tokens_cost(table, label, result.tokens_in, result.tokens_out, result.cached_in.get(rule, 0))
                for rule in CACHE_RULES
            }
            result = replace(
                result, cost_usd=tokens_cost(table, label, result.tokens_in, result.tokens_out), cost_cached_usd=cached
            )
            suite.episodes.append(result)
            if on_episode is not None:
                on_episode(result)
    suite.seconds = time.perf_counter() - started
    return suite


def _board_trace(state: Any) -> tuple[str, ...]:
    """The commands of a text_actor board that the environment answered."""
    if not isinstance(state, dict):
        return ()
    actions = state.get("actions") or []
    answered = len(state.get("observations") or [])
    return tuple(str(a.get("command", "")) for a in actions[:answered] if isinstance(a, dict))


async def _board_figures(store: Store, board_id: str) -> tuple[dict[str, int], dict[str, int], bool]:
    """Tokens per component, prompt overhead per kind, and whether the log verifies by replay.

    A rejected proposal's tokens count as ``repair/retry`` (the model is asked again); an
    accepted one's under its worker. A prompt's overhead is its tokens apportioned by the
    characters of its format, schema and view-framing blocks (``prompt_chars`` in the record)."""
    from slateboard.blueprint import compile_blueprint
    from slateboard.kernel import replay

    loaded = await store.load_board(board_id)
    records = await store.read_records(board_id)
    components: dict[str, int] = {}
    overhead: dict[str, int] = {}
    for rec in records:
        total = rec.usage.tokens_in + rec.usage.tokens_out
        if not total:
            continue
        name = "repair/retry" if rec.outcome == "rejected" else (rec.worker or "-")
        components[name] = components.get(name, 0) + total
        chars = rec.meta.get("prompt_chars") if isinstance(rec.meta, dict) else None
        if isinstance(chars, dict) and chars:
            size = sum(v for v in chars.values() if isinstance(v, int))
            for kind in ("format", "schema", "view_framing"):
                part = chars.get(kind)
                if isinstance(part, int) and part and size:
                    overhead[kind] = overhead.get(kind, 0) + round(rec.usage.tokens_in * part / size)
    report = replay(compile_blueprint(loaded.blueprint), loaded.initial_state, records, revalidate=True)
    return components, overhead, report.ok


async def _episode(
    game: GameFile,
    system: str,
    shared: Model | None,
    steps: int,
    store: Store,
    verifier: VerifierMode = "none",
    tokenizer: TokenCounter | None = None,
    errors: ErrorSchedule | None = None,
    executor: bool = True,
) -> EpisodeResult:
    game_env = TextWorldGame(game.path, name=game.name)
    env: TextEnvironment = game_env
    inner: Model = shared if shared is not None else WalkthroughModel(game_env)
    watch: WatchedEnvironment | None = None
    erring: ErringModel | None = None
    if errors is not None:
        env = watch = WatchedEnvironment(game_env)
        erring = ErringModel(
            inner, errors, episode=f"textworld:{game.name}", format=format_for(system), context=watch.context
        )
        inner = erring
    counting = CountingModel(inner, tokenizer=tokenizer)
    started = time.perf_counter()
    base: dict[str, Any] = {"game": game.name, "system": system, "walkthrough": game.walkthrough}
    try:
        if system == "slateboard":
            ep = await play_on_board(
                env,
                store,
                model=counting,
                max_commands=steps,
                name=f"textworld {game.name}",
                verifier=verifier,
                executor=executor,
            )
            if erring is not None and watch is not None:
                records = await store.read_records(ep.result.board_id)
                base["model_errors"] = tally_board(
                    erring.injections, records, watch, errors.kinds if errors else (), erring.roles
                )
                base["off_policy"] = sum(watch.off_policy)
            usage = ep.result
            tokens_in = sum(u.tokens_in for u in usage.usage.values())
            tokens_out = sum(u.tokens_out for u in usage.usage.values())
            components, overhead, verified = await _board_figures(store, ep.result.board_id)
            last = ep.last
            return EpisodeResult(
                **base,
                won=ep.won,
                outcome=ep.outcome,
                commands=ep.commands,
                score=last.score if last else 0,
                max_score=last.max_score if last else game.max_score,
                calls=counting.calls,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                seconds=time.perf_counter() - started,
                board_id=ep.result.board_id,
                end_reason=ep.result.end_reason,
                trace=_board_trace(ep.result.state),
                counting=counting.method,
                components=components,
                overhead=overhead,
                verified=verified,
                cached_in=counting.cached,
            )
        player = PEER_PLAYERS.get(system)
        if player is None:
            raise InvalidInput(f"unknown system {system!r}")
        peer: PeerEpisode = await player(env, counting, max_commands=steps)
        if erring is not None and watch is not None:
            base["model_errors"] = tally_peer(erring.injections, watch, errors.kinds if errors else ())
            base["off_policy"] = sum(watch.off_policy)
        return EpisodeResult(
            **base,
            won=peer.won,
            outcome=peer.outcome,
            commands=peer.commands,
            score=peer.last.score if peer.last else 0,
            max_score=peer.last.max_score if peer.last else game.max_score,
            calls=peer.calls,
            tokens_in=peer.tokens_in,
            tokens_out=peer.tokens_out,
            seconds=time.perf_counter() - started,
            end_reason=peer.outcome,
            notes=tuple(peer.notes),
            trace=tuple(peer.trace),
            counting=counting.method,
            components=dict(counting.by_component),
            cached_in=counting.cached,
        )
    except Exception as exc:
        return EpisodeResult(
            **base,
            won=False,
            outcome="error",
            commands=env.commands,
            score=0,
            max_score=game.max_score,
            calls=counting.calls,
            tokens_in=counting.tokens_in,
            tokens_out=counting.tokens_out,
            seconds=time.perf_counter() - started,
            error=f"{type(exc).__name__}: {exc}",
            cached_in=counting.cached,
        )
    finally:
        env.close()
