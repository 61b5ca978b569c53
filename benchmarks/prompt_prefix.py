"""The stable-prefix share of prompt tokens per LLM worker (issue 42): how much of what each
worker sends is a byte-identical prefix across all its calls, which a provider's prompt cache
(OpenAI automatic, Anthropic ``cache_control`` on the system block) bills at the cached rate.

Runs, with no network and no model weights:

* the ``retention`` template with a scripted model (a symptom refused by the kernel, a refuted
  cause, the supported one: three calls of its ``hypothesis`` worker);
* the first ``--games`` games of the full TextWorld tier (seed ``--seed``, not a test seed)
  played by the walkthrough on the ``text_actor`` board (``planner`` and ``actor``), when
  TextWorld is installed.

For each worker it prints the calls, the mean prompt tokens (estimated, chars/4), the longest
prefix common to all its calls in a run (``stable``, tokens per call), whether the system
message is byte-identical across calls, the share of all its prompt tokens inside the stable
prefix, and the share a prefix cache would serve (``cached``: what an earlier call of the same
run began with, ``slateboard_eval.prompt_cache``; no provider minimum applied).

    python benchmarks/prompt_prefix.py [--seed 7373] [--games 12]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from slateboard.blueprint.templates import load_template
from slateboard.models import DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE, DEFAULT_TIMEOUT, Generation, Message, Model
from slateboard.models.protocol import estimate_tokens
from slateboard.models.scripted import ScriptedModel
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store
from slateboard_eval.prompt_cache import PromptCache, render

_WORKER = re.compile(r"You are worker '([^']+)'")


class Recording:
    """A Model that passes each call to ``inner`` and keeps its messages under the worker named
    in the prompt ("You are worker 'NAME'")."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.calls: dict[str, list[Sequence[Message]]] = defaultdict(list)

    @property
    def name(self) -> str:
        """The inner model's name."""
        return self.inner.name

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = DEFAULT_TEMPERATURE,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> Generation:
        """Record, then answer as ``inner``."""
        found = _WORKER.search("\n".join(m.content for m in messages))
        self.calls[found.group(1) if found else "?"].append(list(messages))
        return await self.inner.generate(
            messages, json_schema=json_schema, max_tokens=max_tokens, temperature=temperature, timeout=timeout
        )


def _text(messages: Sequence[Message]) -> str:
    return "".join(f"<{m.role}>{m.content}" for m in messages)


def _common_prefix(texts: Sequence[str]) -> int:
    first = min(texts, key=len)
    for i, ch in enumerate(first):
        if any(t[i] != ch for t in texts):
            return i
    return len(first)


def report(title: str, episodes: Sequence[Mapping[str, list[Sequence[Message]]]]) -> None:
    """One line per worker over ``episodes`` (each a worker's recorded calls in one run): calls,
    mean prompt tokens, the stable prefix (common to all its calls in a run) as tokens per call
    and as a share of its prompt tokens, whether its system message never changes, and the
    share a prefix cache serves (``PromptCache``, per run: any prefix an earlier call of the
    run, of any worker, began with)."""
    print(f"\n{title}")
    print(
        f"  {'worker':<12}{'calls':>6}{'prompt':>9}{'stable':>9}  {'system same':<12}{'stable share':>13}{'cached':>8}"
    )
    rows: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    systems: dict[str, set[str]] = defaultdict(set)
    for calls in episodes:
        cache = PromptCache()
        order = sorted(((n, w, m) for w, seen in calls.items() for n, m in enumerate(seen)), key=lambda c: c[0])
        served: dict[str, int] = defaultdict(int)
        for _, worker, messages in order:
            served[worker] += cache.add(messages, estimate_tokens(render(messages))).any
        for worker, seen in calls.items():
            texts = [_text(m) for m in seen]
            stable = _common_prefix(texts) if len(texts) > 1 else 0
            systems[worker].update(m[0].content for m in seen if m and m[0].role == "system")
            row = rows[worker]
            row[0] += len(texts)
            row[1] += sum(estimate_tokens(t) for t in texts)
            row[2] += sum(estimate_tokens(t[:stable]) for t in texts)
            row[3] += served[worker]
    for worker, (calls_n, prompt, stable_tokens, cached, _) in sorted(rows.items()):
        print(
            f"  {worker:<12}{calls_n:>6.0f}{prompt / calls_n:>9.0f}{stable_tokens / calls_n:>9.0f}"
            f"  {len(systems[worker]) == 1!s:<12}{stable_tokens / prompt:>13.0%}{cached / prompt:>8.0%}"
        )


def _pick(fact: str, hid: str) -> str:
    return json.dumps({"patch": [{"op": "add", "path": "/hypotheses/-", "value": {"id": hid, "fact": fact}}]})


async def retention() -> dict[str, list[Sequence[Message]]]:
    """The retention template on a scripted model; its workers' recorded calls."""
    model = Recording(ScriptedModel([_pick("f3", "h1"), _pick("f2", "h1"), _pick("f1", "h2")]))
    store = await open_store("memory://")
    try:
        bp = load_template("retention")
        board = await create_board(store, bp, inputs={"question": "Why did retention drop in March?"})
        await Runner(store, board, model=model, parallel=1).run()
    finally:
        await store.close()
    return model.calls


async def textworld(seed: int, games: int) -> list[dict[str, list[Sequence[Message]]]] | None:
    """The first ``games`` games of the full TextWorld tier (seed ``seed``) played by the
    walkthrough, each game's calls by worker; None without TextWorld."""
    try:
        from slateboard_eval.envs import WalkthroughModel, play_on_board
        from slateboard_eval.envs.textworld import TextWorldGame, game_set, generate_games
    except ImportError:
        return None
    played = []
    for game in generate_games(game_set(full=True)[:games], seed=seed):  # the eval's own game cache
        env = TextWorldGame(game.path)
        model = Recording(WalkthroughModel(env))
        store = await open_store("memory://")
        try:
            await play_on_board(env, store, model=model, max_commands=60)
        finally:
            await store.close()
            env.close()
        played.append(dict(model.calls))
    return played


def main() -> None:
    """Print the stable-prefix shares."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seed", type=int, default=7373, help="TextWorld game seed (no test uses it)")
    parser.add_argument("--games", type=int, default=12, help="games of the full TextWorld tier (1-12)")
    args = parser.parse_args()
    report("retention template (scripted model)", [asyncio.run(retention())])
    tw = asyncio.run(textworld(args.seed, args.games)) if os.environ.get("PREFIX_SKIP_TEXTWORLD") is None else None
    if tw is None:
        print("\nTextWorld: not installed (pip install 'slateboard-eval[textworld]'), skipped")
    else:
        report(f"TextWorld text_actor board (walkthrough, {len(tw)} games, seed {args.seed})", tw)


if __name__ == "__main__":
    main()
