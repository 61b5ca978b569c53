"""Generate TextWorld games in one process, exactly as ``tw-make CHALLENGE ARGS --seed S`` does.

Run as ``python -m slateboard_eval.envs._twmake JOBS.json`` with ``PYTHONHASHSEED=0`` (the caller,
``slateboard_eval.envs.textworld.generate_games``, does both): TextWorld writes some sets in hash
order into the game's JSON, so a fixed hash seed is what makes the files byte-for-byte
reproducible. One process for a whole batch because the text grammars TextWorld parses on its
first game (several seconds) are cached for the next ones.

Each job is ``{"challenge": "tw-simple", "args": ["--rewards", "dense", ...], "seed": 1,
"output": "/path/name.z8"}``; for each one line of JSON goes to stdout: ``{"output", "walkthrough",
"max_score"}`` or ``{"output", "error"}``. The exit status is 1 when any job failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from slateboard.errors import InvalidInput

# The Z-machine header's serial number (6 ASCII bytes at 0x12) is the compile date; a fixed one
# keeps a game file identical from one day to the next (it is not part of the checksum).
SERIAL_OFFSET = 0x12
SERIAL = b"000000"


def normalise_serial(path: Path) -> None:
    """Set the Z-machine serial number of the story file at ``path`` to ``000000``."""
    data = bytearray(path.read_bytes())
    if len(data) >= SERIAL_OFFSET + len(SERIAL):
        data[SERIAL_OFFSET : SERIAL_OFFSET + len(SERIAL)] = SERIAL
        path.write_bytes(bytes(data))


def make_one(job: dict[str, Any]) -> dict[str, Any]:
    """Generate and compile one game (the tw-make code path for a challenge)."""
    import textworld
    import textworld.challenges
    from textworld.generator import compile_game

    name = str(job["challenge"])
    if name == "custom":
        return make_custom(job)
    if name not in textworld.challenges.CHALLENGES:
        known = ", ".join(sorted(textworld.challenges.CHALLENGES))
        raise InvalidInput(f"unknown TextWorld challenge {name!r} (challenges: {known})")
    _, make_game, add_arguments = textworld.challenges.CHALLENGES[name]
    parser = argparse.ArgumentParser(prog=name)
    add_arguments(parser)
    settings = vars(parser.parse_args([str(a) for a in job.get("args", [])]))
    output = Path(str(job["output"])).resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    options = textworld.GameOptions()
    options.seeds = int(job["seed"])
    options.path = str(output)
    options.file_ext = output.suffix or ".z8"
    options.force_recompile = True
    game = make_game(settings=settings, options=options)
    game_file = Path(compile_game(game, options))
    normalise_serial(game_file)
    return {
        "output": str(game_file),
        "walkthrough": list(game.metadata.get("walkthrough", [])),
        "max_score": int(game.max_score),
    }


def custom_parser() -> argparse.ArgumentParser:
    """The ``tw-make custom`` settings slateboard uses (same names and defaults as tw-make)."""
    parser = argparse.ArgumentParser(prog="custom")
    parser.add_argument("--world-size", type=int, default=5)
    parser.add_argument("--nb-objects", type=int, default=10)
    parser.add_argument("--nb-parallel-quests", type=int, default=1)
    parser.add_argument("--quest-length", type=int)
    parser.add_argument("--quest-breadth", type=int)
    parser.add_argument("--theme", default="house")
    return parser


def make_custom(job: dict[str, Any]) -> dict[str, Any]:
    """Generate and compile one ``tw-make custom`` world (rooms, objects, quest length)."""
    import textworld

    args = custom_parser().parse_args([str(a) for a in job.get("args", [])])
    output = Path(str(job["output"])).resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    options = textworld.GameOptions()
    options.seeds = int(job["seed"])
    options.path = str(output)
    options.file_ext = output.suffix or ".z8"
    options.force_recompile = True
    options.nb_rooms = args.world_size
    options.nb_objects = args.nb_objects
    options.nb_parallel_quests = args.nb_parallel_quests
    options.grammar.theme = args.theme
    if args.quest_length:
        options.chaining.min_length = args.quest_length
        options.chaining.max_length = args.quest_length
        options.chaining.max_depth = args.quest_length
    if args.quest_breadth:
        options.chaining.min_breadth = args.quest_breadth
        options.chaining.max_breadth = args.quest_breadth
    game_file, game = textworld.make(options)
    normalise_serial(Path(game_file))
    walkthrough = list(game.metadata.get("walkthrough", [])) or list(game.main_quest.commands)
    return {"output": str(game_file), "walkthrough": walkthrough, "max_score": int(game.max_score)}


def main(argv: list[str]) -> int:
    """Run the jobs of the JSON file ``argv[0]`` (see the module docstring)."""
    if len(argv) != 1:
        sys.stderr.write("usage: python -m slateboard_eval.envs._twmake JOBS.json\n")
        return 2
    if os.environ.get("PYTHONHASHSEED") != "0":
        sys.stderr.write("warning: PYTHONHASHSEED is not 0: the games' JSON files will not be reproducible\n")
    jobs = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    failed = False
    for job in jobs:
        try:
            line = make_one(job)
        except Exception as exc:
            failed = True
            traceback.print_exc(file=sys.stderr)
            line = {"output": str(job.get("output")), "error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
