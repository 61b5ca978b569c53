"""TextWorld games for slateboard: a fixed, seeded game set generated offline, and a game as a
TextEnvironment (observation, admissible commands, score/won/lost, walkthrough).

TextWorld (``pip install 'slateboard-eval[textworld]'``) ships its Inform 7 compiler inside its wheel,
so ``tw-make`` and ``generate_games`` need no network. Games are generated once into a cache
directory (``default_cache_dir()``, or any directory) and reused: a game is named by its
challenge, settings and seed, and the same name always holds the same bytes (see
``slateboard_eval.envs._twmake`` for how that is ensured).

Importing this module does not import TextWorld; ``textworld_available()`` says whether it is
installed, and the functions that need it raise TextWorldMissing (with the install hint) when
it is not.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slateboard.errors import InvalidInput, UsageError

from ._protocol import EpisodeCounters, TextTurn, clip

__all__ = [
    "CI_GAMES",
    "DEFAULT_SEED",
    "FULL_GAMES",
    "GAME_SUFFIXES",
    "HARD_GAMES",
    "TIERS",
    "GameFile",
    "GameSpec",
    "TextWorldGame",
    "TextWorldMissing",
    "clean_feedback",
    "default_cache_dir",
    "existing_games",
    "game_set",
    "generate_games",
    "textworld_available",
    "textworld_version",
]

INSTALL_HINT = "install the textworld extra: pip install 'slateboard-eval[textworld]'"
DEFAULT_SEED = 1234
_GENERATION_TIMEOUT_S = 180.0
"""Per game: the first game of a batch also parses TextWorld's grammars (tens of seconds on a busy 2-core VM)."""


class TextWorldMissing(UsageError, RuntimeError):
    """TextWorld is not installed (the message says how to install it)."""


def textworld_available() -> bool:
    """True when the ``textworld`` package can be imported."""
    return importlib.util.find_spec("textworld") is not None


def textworld_version() -> str:
    """The installed TextWorld version (TextWorldMissing when it is not installed)."""
    if not textworld_available():
        raise TextWorldMissing(f"TextWorld is not installed; {INSTALL_HINT}")
    from importlib.metadata import version

    return version("textworld")


def default_cache_dir() -> Path:
    """Where generated games are kept by default: ``$SLATEBOARD_TEXTWORLD_CACHE``, else the
    user cache directory (``.../slateboard/textworld``)."""
    env = os.environ.get("SLATEBOARD_TEXTWORLD_CACHE")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("slateboard")) / "textworld"


@dataclass(frozen=True, slots=True)
class GameSpec:
    """One kind of game: a TextWorld challenge, its ``tw-make`` arguments, and a short label."""

    challenge: str
    args: tuple[str, ...]
    label: str

    def name(self, seed: int) -> str:
        """The game's file stem for ``seed`` (label and seed: the same name, the same game)."""
        return f"{self.label}-s{seed}"

    def command(self, seed: int, output: Path) -> list[str]:
        """The equivalent ``tw-make`` command line."""
        return ["tw-make", self.challenge, *self.args, "--seed", str(seed), "--output", str(output), "-f"]


CI_GAMES: tuple[GameSpec, ...] = (
    GameSpec("tw-coin_collector", ("--level", "5"), "coin-l5"),
    GameSpec("tw-treasure_hunter", ("--level", "5"), "treasure-l5"),
    GameSpec("tw-simple", ("--rewards", "dense", "--goal", "detailed"), "simple-dense-detailed"),
    GameSpec("tw-cooking", ("--recipe", "1", "--take", "1", "--go", "6", "--open"), "cooking-r1t1g6-open"),
)
"""The CI-size set: one game of each challenge, easy settings."""

FULL_GAMES: tuple[GameSpec, ...] = (
    *CI_GAMES,
    GameSpec("tw-coin_collector", ("--level", "15"), "coin-l15"),
    GameSpec("tw-coin_collector", ("--level", "30"), "coin-l30"),
    GameSpec("tw-treasure_hunter", ("--level", "10"), "treasure-l10"),
    GameSpec("tw-treasure_hunter", ("--level", "20"), "treasure-l20"),
    GameSpec("tw-simple", ("--rewards", "balanced", "--goal", "brief"), "simple-balanced-brief"),
    GameSpec("tw-simple", ("--rewards", "sparse", "--goal", "none"), "simple-sparse-none"),
    GameSpec("tw-cooking", ("--recipe", "2", "--take", "2", "--go", "6", "--open", "--cut"), "cooking-r2t2g6-open-cut"),
    GameSpec(
        "tw-cooking",
        ("--recipe", "3", "--take", "3", "--go", "9", "--open", "--cook", "--cut"),
        "cooking-r3t3g9-open-cook-cut",
    ),
)
"""The full set: the CI games plus harder levels of every challenge."""


HARD_GAMES: tuple[GameSpec, ...] = (
    GameSpec("custom", ("--world-size", "10", "--nb-objects", "20", "--quest-length", "6"), "custom-w10-o20-q6"),
    GameSpec("custom", ("--world-size", "15", "--nb-objects", "25", "--quest-length", "8"), "custom-w15-o25-q8"),
    GameSpec("custom", ("--world-size", "20", "--nb-objects", "30", "--quest-length", "10"), "custom-w20-o30-q10"),
)
"""The hard tier: ``tw-make custom`` worlds (more rooms, more objects, longer quests)."""

TIERS: dict[str, tuple[GameSpec, ...]] = {"ci": CI_GAMES, "full": FULL_GAMES, "hard": HARD_GAMES}


def game_set(*, full: bool = False, games: int | None = None, tier: str | None = None) -> list[GameSpec]:
    """The games of a tier (``ci``, ``full`` or ``hard``; ``full=True`` is the full tier), cut
    to its first ``games`` entries when given. InvalidInput (a ValueError) for an unknown tier or count."""
    name = tier or ("full" if full else "ci")
    if name not in TIERS:
        raise InvalidInput(f"unknown game tier {name!r} (tiers: {', '.join(TIERS)})")
    specs = list(TIERS[name])
    if games is not None:
        if games < 1:
            raise InvalidInput(f"the number of games must be >= 1, got {games}")
        if games > len(specs):
            which = "CI" if name == "ci" else name
            hint = " (use the full set for more)" if name == "ci" else ""
            raise InvalidInput(f"the {which} game set has {len(specs)} games, {games} asked{hint}")
        specs = specs[:games]
    return specs


GAME_SUFFIXES = (".z8", ".ulx")


def existing_games(paths: Sequence[Path | str]) -> list[GameFile]:
    """Games already on disk: each path a story file (``.z8``/``.ulx``, its ``.json`` beside
    it) or a folder of them (sorted by name). The walkthrough length and maximum score come
    from the game's ``.json`` (0 when it does not say). FileNotFoundError naming a path that
    is not there, a story file without its ``.json``, or a folder without games."""
    stories: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix in GAME_SUFFIXES and p.is_file())
            if not found:
                raise FileNotFoundError(f"no .z8/.ulx game in {path}")
            stories.extend(found)
        elif path.is_file() and path.suffix in GAME_SUFFIXES:
            stories.append(path)
        else:
            raise FileNotFoundError(f"no TextWorld game at {path} (a .z8/.ulx file or a folder of them)")
    out = []
    for story in stories:
        meta = story.with_suffix(".json")
        if not meta.is_file():
            raise FileNotFoundError(f"{story} has no {meta.name} beside it (TextWorld needs it to play)")
        walkthrough, max_score = _game_json_facts(meta)
        spec = GameSpec("file", (), story.stem)
        out.append(GameFile(story.stem, story, spec, 0, walkthrough, max_score))
    return out


def _game_json_facts(meta: Path) -> tuple[int, int]:
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0, 0
    metadata = data.get("metadata") if isinstance(data, dict) else None
    walk = metadata.get("walkthrough") if isinstance(metadata, dict) else None
    length = len(walk) if isinstance(walk, list) else 0
    if not length and isinstance(data, dict):
        quests = data.get("quests")
        if isinstance(quests, list) and quests and isinstance(quests[0], dict):
            commands = quests[0].get("commands")
            length = len(commands) if isinstance(commands, list) else 0
    score = 0
    if isinstance(data, dict) and isinstance(data.get("quests"), list):
        score = sum(int(q.get("reward", 1)) for q in data["quests"] if isinstance(q, dict))
    return length, score


@dataclass(frozen=True, slots=True)
class GameFile:
    """A generated game: its name, story file (``.z8``; the ``.json`` and ``.ni`` lie beside it),
    the spec and seed it came from, its walkthrough length and maximum score."""

    name: str
    path: Path
    spec: GameSpec
    seed: int
    walkthrough: int
    max_score: int

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form (what the cache's ``NAME.meta.json`` holds, plus the path)."""
        return {
            "name": self.name,
            "path": str(self.path),
            "challenge": self.spec.challenge,
            "args": list(self.spec.args),
            "label": self.spec.label,
            "seed": self.seed,
            "walkthrough": self.walkthrough,
            "max_score": self.max_score,
        }


def _meta_path(story: Path) -> Path:
    return story.with_suffix(".meta.json")


def _cached(spec: GameSpec, seed: int, story: Path, version: str) -> GameFile | None:
    meta_file = _meta_path(story)
    if not (story.is_file() and story.with_suffix(".json").is_file() and meta_file.is_file()):
        return None
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    same = (
        meta.get("challenge") == spec.challenge
        and meta.get("args") == list(spec.args)
        and meta.get("seed") == seed
        and meta.get("textworld") == version
    )
    if not same:
        return None
    return GameFile(spec.name(seed), story, spec, seed, int(meta["walkthrough"]), int(meta["max_score"]))


def generate_games(
    specs: Sequence[GameSpec],
    *,
    seed: int = DEFAULT_SEED,
    cache_dir: Path | str | None = None,
    timeout_s: float | None = None,
) -> list[GameFile]:
    """The games of ``specs`` for ``seed``, generated offline into ``cache_dir`` when they are
    not there yet (one ``python -m slateboard_eval.envs._twmake`` process for all the missing ones,
    with a fixed hash seed), in the order of ``specs``.

    Guarantees: the same spec and seed give byte-identical ``.z8``, ``.json`` and ``.ni`` files
    (on any day, in any process); a cached game is reused only when its metadata names the same
    challenge, arguments, seed and TextWorld version. Raises TextWorldMissing without TextWorld,
    and RuntimeError naming the game and TextWorld's error when a game cannot be generated.
    """
    version = textworld_version()
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    found: dict[int, GameFile] = {}
    jobs: list[dict[str, Any]] = []
    for i, spec in enumerate(specs):
        story = (root / spec.name(seed)).with_suffix(".z8")
        cached = _cached(spec, seed, story, version)
        if cached is not None:
            found[i] = cached
        else:
            jobs.append({"challenge": spec.challenge, "args": list(spec.args), "seed": seed, "output": str(story)})
    if jobs:
        results = _run_generator(jobs, timeout_s or _GENERATION_TIMEOUT_S * len(jobs))
        by_output = {r["output"]: r for r in results}
        for i, spec in enumerate(specs):
            if i in found:
                continue
            story = (root / spec.name(seed)).with_suffix(".z8")
            made = by_output.get(str(story.resolve()))
            if made is None or "error" in made:
                why = made.get("error") if made else "no result from the generator"
                raise RuntimeError(f"TextWorld could not generate {spec.name(seed)} ({spec.challenge}): {why}")
            walkthrough = len(made.get("walkthrough", []))
            max_score = int(made.get("max_score", 0))
            meta = {
                "challenge": spec.challenge,
                "args": list(spec.args),
                "label": spec.label,
                "seed": seed,
                "textworld": version,
                "walkthrough": walkthrough,
                "max_score": max_score,
            }
            _meta_path(story).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
            found[i] = GameFile(spec.name(seed), story, spec, seed, walkthrough, max_score)
    return [found[i] for i in range(len(specs))]


def _run_generator(jobs: list[dict[str, Any]], timeout_s: float) -> list[dict[str, Any]]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
        json.dump(jobs, fh)
        jobs_file = fh.name
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "slateboard_eval.envs._twmake", jobs_file],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"TextWorld game generation took more than {timeout_s:.0f} s") from exc
    finally:
        Path(jobs_file).unlink(missing_ok=True)
    results = []
    for line in proc.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            results.append(json.loads(line))
    if not results and proc.returncode != 0:
        tail = " ".join(proc.stderr.strip().splitlines()[-1:]) or f"exit status {proc.returncode}"
        raise RuntimeError(f"TextWorld game generation failed: {tail}")
    return results


# -- playing ------------------------------------------------------------------------------------
_BANNER_CHARS = frozenset("_|\\/$ ")
_PROMPT_TAIL = re.compile(r"\n>[^\n]*\Z")


def _is_banner(line: str) -> bool:
    """A line of the ASCII-art title TextWorld prints first (drawn with ``$$``, ``|``, ``_``...)."""
    return "$$" in line or (len(line) > 2 and set(line) <= _BANNER_CHARS)


def clean_feedback(text: str) -> str:
    """TextWorld's raw feedback as a player reads it: without the ASCII-art banner, the ``>``
    prompt and the status line the interpreter prints after it, trailing spaces and runs of
    blank lines."""
    lines = [" ".join(line.split()) for line in text.replace("\r", "").split("\n")]
    kept = [line for line in lines if not _is_banner(line)]
    out = "\n".join(kept).strip("\n")
    out = _PROMPT_TAIL.sub("", "\n" + out).strip()
    if out.endswith(">"):
        out = out[:-1].rstrip()
    return re.sub(r"\n{3,}", "\n\n", out)


class TextWorldGame(EpisodeCounters):
    """A generated TextWorld game as a TextEnvironment (see slateboard_eval.envs).

    Each turn carries the cleaned feedback, the admissible commands TextWorld computes for the
    current state, the score, the maximum score and whether the game is won or lost;
    ``policy()`` is TextWorld's winning policy from the current state (its walkthrough). The
    game is loaded on the first ``reset``; calls are synchronous inside (a step takes
    milliseconds).
    """

    def __init__(self, path: Path | str, *, name: str | None = None) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"no TextWorld game at {self.path}")
        super().__init__()
        self._name = name or self.path.stem
        self._env: Any = None
        self._state: Any = None

    @property
    def name(self) -> str:
        """The game's name (its file stem unless given)."""
        return self._name

    def _start(self) -> Any:
        if self._env is None:
            if not textworld_available():
                raise TextWorldMissing(f"TextWorld is not installed; {INSTALL_HINT}")
            import textworld

            infos = textworld.EnvInfos(
                admissible_commands=True,
                policy_commands=True,
                objective=True,
                score=True,
                max_score=True,
                won=True,
                lost=True,
                moves=True,
                feedback=True,
            )
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=r".*is not fully supported")
                self._env = textworld.start(str(self.path), request_infos=infos)
        return self._env

    def _turn(self, state: Any) -> TextTurn:
        self._state = state
        turn = TextTurn(
            observation=clip(clean_feedback(str(state.feedback or ""))),
            admissible=tuple(str(c) for c in (state.admissible_commands or ())),
            score=int(state.score or 0),
            max_score=int(state.max_score or 0),
            won=bool(state.won),
            lost=bool(state.lost),
            moves=int(state.moves or 0),
            tracked=True,
        )
        self._last = turn
        return turn

    async def reset(self) -> TextTurn:
        """Start the game from the beginning."""
        env = self._start()
        with warnings.catch_warnings():
            # Jericho warns that it has no special support for this story file (it knows a list
            # of published games); TextWorld tracks score, won and lost itself.
            warnings.filterwarnings("ignore", message=r".*is not fully supported")
            state = env.reset()
        self._commands = 0
        self._objective = " ".join(str(state.objective or "").split())
        return self._turn(state)

    async def step(self, command: str) -> TextTurn:
        """Execute ``command`` (an unknown one gets TextWorld's own answer)."""
        if self._env is None or self._state is None:
            await self.reset()
        state, _, _ = self._env.step(command)
        self._commands += 1
        return self._turn(state)

    def policy(self) -> tuple[str, ...]:
        """TextWorld's winning commands from the current state (empty once won or lost)."""
        if self._state is None:
            return ()
        return tuple(str(c) for c in (self._state.policy_commands or ()))

    def close(self) -> None:
        """Close the interpreter."""
        if self._env is not None:
            self._env.close()
            self._env = None
            self._state = None
