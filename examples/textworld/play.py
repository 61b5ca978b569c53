"""Generate a TextWorld game offline with tw-make and let the text_actor team play it.

    python examples/textworld/play.py                      # the local model (SmolLM2-135M)
    python examples/textworld/play.py --walkthrough        # the game's own walkthrough (wins)
    python examples/textworld/play.py --model openai:gpt-4o-mini --game cooking --steps 30

The board (planner, actor, environment; with ``--verifier llm`` an advisory verifier too) is
stored like any other: inspect it with
``slateboard log BOARD`` and ``slateboard show BOARD``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

from slateboard import open_store
from slateboard.progress import progress as progress_line
from slateboard_eval.envs import play_on_board
from slateboard_eval.envs.textworld import CI_GAMES, DEFAULT_SEED, TextWorldGame, textworld_available

GAMES = {spec.challenge.removeprefix("tw-").split("_")[0]: spec for spec in CI_GAMES}


def tw_make() -> str:
    """The tw-make script of this environment (next to the interpreter), else the one on PATH."""
    beside = Path(sys.executable).with_name("tw-make")
    found = str(beside) if beside.exists() else shutil.which("tw-make")
    if found is None:
        raise SystemExit("tw-make not found: pip install 'slateboard-eval[textworld]'")
    return found


def make_game(kind: str, seed: int, out: Path) -> Path:
    """Run tw-make for the game ``kind`` (offline: TextWorld ships its Inform 7 compiler)."""
    spec = GAMES[kind]
    path = out / f"{spec.name(seed)}.z8"
    if path.exists():
        return path
    command = [tw_make(), spec.challenge, *spec.args, "--seed", str(seed), "--output", str(path), "-f", "--silent"]
    print("$ tw-make " + " ".join(command[1:]))
    # A fixed hash seed makes the game's .json byte-for-byte reproducible (TextWorld writes sets).
    subprocess.run(command, check=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    return path


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="local", help="model string (default: local, SmolLM2-135M in process)")
    parser.add_argument("--game", choices=sorted(GAMES), default="simple", help="which kind of game (default: simple)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="game seed")
    parser.add_argument("--steps", type=int, default=20, help="command budget (default: 20)")
    parser.add_argument("--out", type=Path, default=Path("tw_games"), help="where tw-make writes the game")
    parser.add_argument("--store", default=os.environ.get("SLATEBOARD_STORE"), help="store URL (default: slateboard's)")
    parser.add_argument("--walkthrough", action="store_true", help="play the game's walkthrough instead of a model")
    parser.add_argument(
        "--verifier",
        choices=["none", "llm"],
        default="none",
        help="none (default: the kernel's invariants check, one model call per command) or llm (an advisory verifier)",
    )
    args = parser.parse_args()
    if not textworld_available():
        raise SystemExit("TextWorld is not installed: pip install 'slateboard-eval[textworld]'")
    if args.steps < 1:
        raise SystemExit("--steps must be >= 1")

    path = make_game(args.game, args.seed, args.out)
    game = TextWorldGame(path)
    store = await open_store(args.store)
    try:
        who = "the walkthrough" if args.walkthrough else f"model {args.model}"
        print(f"playing {game.name} with {who}, at most {args.steps} commands ...")
        with progress_line(f"playing {game.name} with {who}"):  # on a terminal: what and for how long
            episode = await play_on_board(
                game,
                store,
                model=args.model,
                walkthrough=args.walkthrough,
                max_commands=args.steps,
                verifier=args.verifier,
            )
    finally:
        game.close()
        await store.close()
    result = episode.result
    state = result.state if isinstance(result.state, dict) else {}
    print(f"objective: {game.objective}")
    for action, obs in zip(state.get("actions", []), state.get("observations", []), strict=False):
        first_line = obs["text"].splitlines()[0] if obs["text"] else ""
        print(f"  > {action['command']:<40} {first_line[:70]}")
    progress = state.get("progress", {})
    print(
        f"outcome: {episode.outcome} (board end: {result.end_reason}); score {progress.get('score')}/"
        f"{progress.get('max_score')} in {episode.commands} commands; {result.total_tokens} tokens"
    )
    store_opt = f" --store {args.store}" if args.store else ""
    print(f"board: {result.board_id}  (slateboard log {result.board_id}{store_opt})")


if __name__ == "__main__":
    asyncio.run(main())
