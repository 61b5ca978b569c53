"""Bounded views of the classic board (issue 15 items 4 and 5): the problem statement is in every
prompt whatever the board's size, and no prompt (agent, coordinator, decider) grows past its
budget."""

from __future__ import annotations

import json
from typing import Any

from slateboard.models import Message
from slateboard.models.scripted import ScriptedModel
from slateboard.team import Agent, Team
from slateboard.team._agent import bounded_board, render_board
from slateboard.team._board import make_entry

PROBLEM = (
    "PROBLEM-7F3Q: design a write-through cache for a slow key-value service that keeps p99 latency "
    "under 20 ms while the backing store is unavailable for up to five minutes."
)
VIEW_BUDGET = 100_000
TEMPLATE_ALLOWANCE = 2_000
"""The fixed text around a board in a prompt (system instructions, role lines, the coordinator
instruction, the reply format): a prompt's budget is the view budget + the pinned problem + this."""
ROUNDS = 200
ENTRY_CHARS = 2_000
NAMES = ("analyst", "critic", "builder")


def _text(messages: Any) -> str:
    return "\n".join(m.content for m in messages if isinstance(m, Message))


def _entry_text(n: int) -> str:
    head = f"contribution {n}: "
    return head + ("lorem ipsum dolor sit amet " * 80)[: ENTRY_CHARS - len(head)]


async def test_200_rounds_of_2000_char_entries_every_prompt_states_the_problem_within_budget() -> None:
    prompts: dict[str, list[str]] = {"agent": [], "coordinator": [], "decider": []}
    counter = {"agent": 0, "coordinator": 0}

    def agent_reply(messages: Any) -> str:
        prompts["agent"].append(_text(messages))
        counter["agent"] += 1
        return _entry_text(counter["agent"])

    def coordinator_reply(messages: Any) -> str:
        prompts["coordinator"].append(_text(messages))
        counter["coordinator"] += 1
        agent = NAMES[(counter["coordinator"] - 1) % len(NAMES)]
        return json.dumps({"terminate": False, "next_agent": agent, "instruction": "Add the next piece."})

    def decider_reply(messages: Any) -> str:
        prompts["decider"].append(_text(messages))
        return "final answer"

    model = ScriptedModel([agent_reply], cycle=True)
    team = Team.blackboard(
        agents={n: Agent(f"You are the {n}.", model=model) for n in NAMES},
        coordinator=Agent("Pick the next agent.", model=ScriptedModel([coordinator_reply], cycle=True)),
        decider=Agent("Write the final answer.", model=ScriptedModel([decider_reply])),
        max_rounds=ROUNDS,
        view_budget=VIEW_BUDGET,
    )
    result = await team.run(PROBLEM)

    assert result.output == "final answer" and result.end_reason == "max_rounds"
    board_chars = sum(len(str(e["content"])) for e in result.public)
    assert board_chars > 3 * VIEW_BUDGET  # the board is far over every view's budget
    assert (len(prompts["agent"]), len(prompts["coordinator"]), len(prompts["decider"])) == (ROUNDS, ROUNDS, 1)
    limit = VIEW_BUDGET + len(PROBLEM) + TEMPLATE_ALLOWANCE
    for role, texts in prompts.items():
        for i, text in enumerate(texts):
            assert PROBLEM in text, f"{role} prompt {i + 1} lost the problem statement"
            assert len(text) <= limit, f"{role} prompt {i + 1} is {len(text)} characters, over {limit}"
    # The runs reached the regime where older entries are cut, in every role.
    assert "earlier entries not shown" in prompts["agent"][-1]
    assert "earlier entries not shown" in prompts["coordinator"][-1]
    decider = prompts["decider"][0]
    assert "Full blackboard state" not in decider and "summary with handles" in decider
    # The newest entry is in the last prompts (the budget keeps the newest).
    newest = str(result.public[-1]["content"])
    assert newest in decider
    assert _entry_text(ROUNDS - 1) in prompts["coordinator"][-1]


async def test_a_small_board_is_the_full_board_for_every_role() -> None:
    prompts: list[str] = []

    def reply(messages: Any) -> str:
        prompts.append(_text(messages))
        return "short reply"

    team = Team.blackboard(
        agents={"a": Agent("You are a.", model=ScriptedModel([reply], cycle=True))},
        decider=Agent("Decide.", model=ScriptedModel([reply], cycle=True)),
        max_rounds=3,
    )
    await team.run(PROBLEM)
    assert all(PROBLEM in p for p in prompts)
    assert "Full blackboard state:\n" in prompts[-1]
    assert not any("earlier entries not shown" in p for p in prompts)
    # The problem appears once: as the board's first entry, not repeated by the pin.
    assert all(p.count(PROBLEM) == 1 for p in prompts)


def _board(n: int, chars: int) -> list[dict[str, Any]]:
    from datetime import UTC, datetime

    at = datetime(2026, 1, 1, tzinfo=UTC)
    out = [make_entry("e1", "user", PROBLEM, kind="problem", at=at)]
    out += [make_entry(f"e{i}", "a", f"{i}:" + "y" * chars, at=at) for i in range(2, n + 1)]
    return out


def test_bounded_board_is_render_board_when_it_fits() -> None:
    board = _board(20, 50)
    assert bounded_board(board, 10_000) == render_board(board)
    assert bounded_board([], 100) == "(empty)" == render_board([])


def test_bounded_board_keeps_the_problem_and_the_newest_entries_and_counts_the_rest() -> None:
    board = _board(500, 200)
    text = bounded_board(board, 5_000)
    lines = text.split("\n")
    assert lines[0] == "=== Public board ===" and lines[1].startswith("e1 [problem] user: " + PROBLEM)
    shown = [ln for ln in lines[3:]]
    assert shown[-1].startswith("e500 ")  # newest kept
    hidden = lines[2]
    assert hidden.startswith("(") and "earlier entries not shown: e2 to " in hidden
    count = int(hidden[1:].split(" ", 1)[0])
    assert count + len(shown) + 1 == len(board)  # every entry is shown or counted, none twice
    assert sum(len(s) + 1 for s in shown) <= 5_000
    # A budget smaller than one entry still shows the problem and counts everything else.
    tiny = bounded_board(board, 10).split("\n")
    assert tiny[1].startswith("e1 [problem]") and tiny[2] == "(499 earlier entries not shown: e2 to e500)"


async def test_a_problem_larger_than_the_view_budget_is_still_in_every_prompt() -> None:
    # The pin, not the fill's preference for small scalars, is what keeps a long problem.
    long_problem = PROBLEM + " Constraints: " + "the cache must stay consistent. " * 60
    budget = 1_500
    prompts: list[str] = []

    def reply(messages: Any) -> str:
        prompts.append(_text(messages))
        return f"note {len(prompts)} " + "z" * 400

    def pick(messages: Any) -> str:
        prompts.append(_text(messages))
        return json.dumps({"terminate": False, "next_agent": NAMES[len(prompts) % 2], "instruction": None})

    team = Team.blackboard(
        agents={n: Agent(f"You are the {n}.", model=ScriptedModel([reply], cycle=True)) for n in NAMES[:2]},
        coordinator=Agent("Pick.", model=ScriptedModel([pick], cycle=True)),
        decider=Agent("Decide.", model=ScriptedModel([reply], cycle=True)),
        max_rounds=12,
        view_budget=budget,
    )
    result = await team.run(long_problem)
    assert len(long_problem) > budget and len(prompts) == 12 + 12 + 1
    assert len(result.public) == 13
    for i, text in enumerate(prompts):
        assert long_problem in text, f"prompt {i + 1} lost the problem statement"
        assert len(text) <= budget + len(long_problem) + TEMPLATE_ALLOWANCE


def test_every_entry_of_an_over_budget_view_is_shown_summarised_or_counted_exactly_once() -> None:
    # Whichever way the budget cuts the problem entry (a summary handle or part of a range),
    # the prompt shows the pinned problem once in its place and counts the rest exactly.
    from datetime import UTC, datetime

    from slateboard.team._agent import AgentWorker, DeciderWorker
    from slateboard.team._board import blackboard_blueprint, compile_blackboard
    from slateboard.team._render import _public_shown
    from slateboard.views import build_view

    at = datetime(2026, 1, 1, tzinfo=UTC)
    spec = blackboard_blueprint(["a", "b"])
    compiled = compile_blackboard(spec)  # the views only need the contracts
    state = compiled.initial_state()
    assert isinstance(state, dict)
    state["task"] = PROBLEM
    state["public"] = [make_entry("e1", "user", PROBLEM, kind="problem", at=at)]
    state["public"] += [
        make_entry(f"e{i}", "ab"[i % 2], f"entry {i} " + "w" * (30 + 7 * i), at=at) for i in range(2, 60)
    ]
    worker = AgentWorker("a", Agent("x", model=ScriptedModel(["unused"])))
    decider = DeciderWorker(Agent("d", model=ScriptedModel(["unused"])))
    seen_range_over_problem = False
    for budget in range(1_500, 40_000, 700):
        view = build_view(compiled, "a", state, 1, budget=budget)
        shown = _public_shown(view)
        summaries = sum(1 for e in shown.public if isinstance(e, str))
        whole = len(shown.public) - summaries
        pinned = 1 if shown.problem is not None else 0
        assert whole + summaries + shown.hidden + pinned == len(state["public"]), budget
        prompt = worker.prompt(view)
        assert prompt.count(PROBLEM) == 1, budget
        if shown.problem is not None:
            assert not any(isinstance(e, str) and e.startswith("e1 ") for e in shown.public)
            seen_range_over_problem |= any(h.id.startswith("[0:") for h in view.handles)
        decider_view = build_view(compiled, "__decider", state, 1, budget=budget)
        decided = decider.prompt(decider_view)
        assert decided.count(PROBLEM) == 1
        complete = _public_shown(decider_view).complete
        assert ("Full blackboard state:" in decided) == complete != ("summary with handles" in decided)
    assert seen_range_over_problem  # the sweep met budgets that cut the problem entry
    full = build_view(compiled, "a", state, 1, budget=200_000)
    assert _public_shown(full).complete and "Full blackboard state:" in decider.prompt(
        build_view(compiled, "__decider", state, 1, budget=200_000)
    )
