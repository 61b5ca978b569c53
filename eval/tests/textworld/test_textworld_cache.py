"""The modelled prompt cache and the pooled cost table (issue 42): a prompt is served from the
cache as far as an earlier prompt of the episode began the same way, OpenAI's 1,024-token rule
rounds that down, cached tokens are priced at the cached rate, and the table pools reports."""

from __future__ import annotations

from typing import Any

import pytest

from slateboard.models import Message
from slateboard.models.pricing import PriceTable
from slateboard_eval.cost import tokens_cost
from slateboard_eval.cost_table import cost_rows
from slateboard_eval.prompt_cache import PromptCache, cached_under_minimum, render


def _prompt(system: str, user: str) -> list[Message]:
    return [Message.system(system), Message.user(user)]


def test_a_prompt_is_cached_as_far_as_an_earlier_one_began_the_same_way() -> None:
    cache = PromptCache()
    rules = "R" * 400
    first = _prompt(rules, "board one")
    assert cache.add(first, 200).any == 0  # nothing before it
    again = cache.add(first, 200)
    assert again.any == min(len(render(first)) // 4, 200) and again.min1024 == 0  # short of 1,024
    other = _prompt(rules, "board two, longer")
    shared = len(render(_prompt(rules, "board "))) - len("<|im_end|>\n")  # up to "board "
    assert cache.add(other, 300).any == shared // 4
    # a prompt whose system message differs from its first character shares the role header only
    header = len("<|im_start|>system\n") // 4
    assert cache.add(_prompt("X" + rules, "board one"), 200).any == header
    assert cache.any == again.any + shared // 4 + header and len(cache.seen) == 4


def test_the_longest_shared_prefix_counts_whichever_earlier_prompt_has_it() -> None:
    cache = PromptCache()
    long_head = "A" * 5000
    cache.add(_prompt(long_head, "one"), 10_000)
    cache.add(_prompt("B" * 50, "two"), 10_000)
    found = cache.add(_prompt(long_head, "three"), 10_000)
    assert found.any == (len(render(_prompt(long_head, ""))) - len("<|im_end|>\n")) // 4
    assert found.min1024 == cached_under_minimum(found.any) == 1152  # 1,260 tokens: 1,024 + one step


@pytest.mark.parametrize(("tokens", "cached"), [(0, 0), (1023, 0), (1024, 1024), (1151, 1024), (1152, 1152)])
def test_openai_caches_nothing_under_1024_tokens_then_steps_of_128(tokens: int, cached: int) -> None:
    assert cached_under_minimum(tokens) == cached


def test_cached_tokens_are_priced_at_the_cached_rate_and_never_above_the_prompt() -> None:
    table = PriceTable.from_mapping({"m": {"input": 1.0, "output": 2.0, "cached_input": 0.5}}, use_genai_prices=False)
    assert tokens_cost(table, "m", 1_000_000, 0) == pytest.approx(1.0)
    assert tokens_cost(table, "m", 1_000_000, 0, 500_000) == pytest.approx(0.75)
    assert tokens_cost(table, "m", 1000, 0, 5000) == pytest.approx(tokens_cost(table, "m", 1000, 0, 1000))


def _episode(system: str, game: str, won: bool, tokens: int, cost: float) -> dict[str, Any]:
    cached = {"any": cost / 2, "min1024": cost}
    return {"system": system, "game": game, "won": won, "tokens": tokens, "cost_usd": cost, "cost_cached_usd": cached}


def test_the_table_pools_reports_per_rate_and_pairs_the_same_games() -> None:
    a = {
        "errors": None,
        "episodes": [_episode("slateboard", "g1", True, 100, 1.0), _episode("lean", "g1", True, 300, 4.0)],
    }
    b = {
        "errors": None,
        "episodes": [_episode("slateboard", "g1", True, 200, 2.0), _episode("lean", "g1", False, 300, 4.0)],
    }
    c = {"errors": {"rate": 0.3}, "episodes": [_episode("slateboard", "g1", False, 50, 1.0)]}
    rows = cost_rows([a, b, c], resamples=50)
    assert [(r["rate"], r["system"], r["games"], r["wins"]) for r in rows] == [
        (0.0, "slateboard", 2, 2),
        (0.0, "lean", 2, 1),
        (0.3, "slateboard", 1, 0),
    ]
    ours, lean, lost = rows
    assert ours["tokens_per_success"]["value"] == 150 and lean["tokens_per_success"]["value"] == 600
    assert lean["tokens_ratio"]["value"] == 0.25  # 150 / 600 over the same two games
    assert lean["cost_usd_ratio"]["value"] == pytest.approx(1.5 / 8.0, abs=1e-3)
    assert lean["cost_cached_any_per_success"]["value"] == 4.0 and "tokens_ratio" not in ours
    assert lost["tokens_per_success"]["value"] is None  # no success: undefined, not zero
