"""The erring model on the text-game systems (issue 34): slateboard's kernel catches each kind
at the stage it should, before the environment spends a step, and a peer receives the same
error content and sends it to the game. A tiny Python game keeps it fast (no TextWorld)."""

from __future__ import annotations

import json

import pytest

from slateboard.kernel import Record
from slateboard.models import Message
from slateboard.models.erring import CLAIM, HALLUCINATIONS, ErringModel, ErrorKind, ErrorSchedule
from slateboard.stores import open_store
from slateboard_eval.envs import BoardEpisode, TextTurn, WalkthroughModel, play_on_board
from slateboard_eval.erring import (
    PeerFormat,
    SlateboardFormat,
    WatchedEnvironment,
    format_for,
    tally_board,
    tally_peer,
)
from slateboard_eval.textworld_peers import CountingModel

WALKTHROUGH = ("open door", "go east", "take key")


class VaultGame:
    """Open the door, go east, take the key: three commands win; nothing loses."""

    name = "vault"
    objective = "Take the key from the vault."

    def __init__(self) -> None:
        self.commands = 0
        self.last: TextTurn | None = None
        self.door = False
        self.room = "hall"

    def _admissible(self) -> tuple[str, ...]:
        if self.room == "vault":
            return ("look", "go west", "take key")
        return ("look", "close door", "go east") if self.door else ("look", "open door")

    def _turn(self, text: str, won: bool = False) -> TextTurn:
        self.last = TextTurn(
            text, () if won else self._admissible(), score=int(won), max_score=1, won=won, moves=self.commands
        )
        return self.last

    async def reset(self) -> TextTurn:
        self.commands, self.door, self.room = 0, False, "hall"
        return self._turn("You are in a hall. A door leads east.")

    async def step(self, command: str) -> TextTurn:
        self.commands += 1
        if command == "open door" and self.room == "hall":
            self.door = True
            return self._turn("You open the door.")
        if command == "close door" and self.room == "hall":
            self.door = False
            return self._turn("You close the door.")
        if command == "go east" and self.door and self.room == "hall":
            self.room = "vault"
            return self._turn("You are in the vault. A key lies here.")
        if command == "go west" and self.room == "vault":
            self.room = "hall"
            return self._turn("You are in the hall.")
        if command == "take key" and self.room == "vault":
            return self._turn("You take the key. You win!", won=True)
        return self._turn("That does not work here.")

    def policy(self) -> tuple[str, ...]:
        if self.last is not None and self.last.won:
            return ()
        if self.room == "vault":
            return ("take key",)
        return ("go east", "take key") if self.door else WALKTHROUGH

    def close(self) -> None:
        pass


def _seed_for(pattern: dict[int, ErrorKind], calls: int = 12, rate: float = 0.3) -> ErrorSchedule:
    """A schedule whose first ``calls`` calls err exactly at the calls of ``pattern``, with its kinds."""
    kinds = tuple(dict.fromkeys(pattern.values()))
    for seed in range(20000):
        schedule = ErrorSchedule(rate, seed=seed, kinds=kinds)
        if dict(schedule.errors("vault", calls)) == pattern:
            return schedule
    raise AssertionError(f"no seed gives {pattern}")


async def _play_slateboard(
    schedule: ErrorSchedule,
) -> tuple[ErringModel, WatchedEnvironment, BoardEpisode, list[Record]]:
    watch = WatchedEnvironment(VaultGame())
    erring = ErringModel(
        WalkthroughModel(watch), schedule, episode="vault", format=SlateboardFormat(), context=watch.context
    )
    store = await open_store("memory://")
    try:
        ep = await play_on_board(watch, store, model=CountingModel(erring), max_commands=6)
        records = await store.read_records(ep.result.board_id)
    finally:
        await store.close()
    return erring, watch, ep, records


# call 0 is the planner's, call 1 the actor's first command, call 2 its next (after "open door")
@pytest.mark.parametrize(
    ("call", "kind", "stage"),
    [
        # typed replies (no verifier): a broken or foreign value fails the value's schema
        (1, "malformed", "schema"),
        (1, "hallucinated", "invariants"),
        (1, "false_claim", "invariants"),
        (1, "off_contract", "schema"),  # a patch on /plan is no command object
        (1, "repeat", "schema"),  # the actor's first call: nothing to repeat, an empty reply
        (2, "repeat", "invariants"),  # "open door" again: no longer admissible once it is open
        (0, "malformed", "schema"),
        (0, "off_contract", "schema"),
    ],
)
async def test_slateboard_catches_each_kind_before_the_game_sees_it(call: int, kind: ErrorKind, stage: str) -> None:
    erring, watch, ep, records = await _play_slateboard(_seed_for({call: kind}))
    assert [(i.call, i.kind) for i in erring.injections] == [(call, kind)]
    tally = tally_board(erring.injections, records, watch, (kind,))
    assert tally[kind] == {"injected": 1, "caught": 1, "harmful": 0, "to_game": 0, "stages": {stage: 1}}
    # the rejected proposal spent no environment step: the game was won in the walkthrough's three
    assert ep.won and ep.commands == 3 and watch.off_policy == [False, False, False]
    rejected = [r for r in records if r.outcome == "rejected"]
    assert len(rejected) == 1 and rejected[0].stage == stage


async def test_a_plan_that_claims_the_goal_is_accepted_and_counted_harmful() -> None:
    # the plan is the planner's own free-text field: the kernel has nothing to check it against
    erring, watch, ep, records = await _play_slateboard(_seed_for({0: "false_claim"}))
    tally = tally_board(erring.injections, records, watch, ("false_claim",))
    assert tally["false_claim"] == {"injected": 1, "caught": 0, "harmful": 1, "to_game": 0, "stages": {}}
    # accepted as the first plan; being one step long, it is used up by the first command and
    # the planner is asked again (without a verifier nothing else replans)
    plans = [r.patch or "" for r in records if r.worker == "planner" and r.outcome == "accepted"]
    assert ep.won and CLAIM in plans[0] and len(plans) > 1 and ep.result.state.get("plan") != [CLAIM]


async def test_a_peer_receives_the_same_error_and_sends_it_to_the_game() -> None:
    pytest.importorskip("langgraph", reason="langgraph is not installed (pip install 'slateboard[peers]')")
    from slateboard_eval.textworld_peers import play_langgraph_lean

    # langgraph-lean: call 0 planner, call 1 actor, call 2 critic; slateboard: 0 planner, 1 actor
    schedule = _seed_for({1: "hallucinated"})
    board, _, _, _ = await _play_slateboard(schedule)
    watch = WatchedEnvironment(VaultGame())
    erring = ErringModel(
        WalkthroughModel(watch), schedule, episode="vault", format=format_for("langgraph-lean"), context=watch.context
    )
    peer = await play_langgraph_lean(watch, CountingModel(erring), max_commands=6)
    (ours,), (theirs,) = board.injections, erring.injections
    command = json.loads(ours.text)  # the typed actor's reply: the command alone
    assert command in HALLUCINATIONS and json.loads(theirs.text) == {"command": command}
    # its critic (a model call following the walkthrough) rejects it and the actor is asked again:
    # the game never sees it, but the error reached the graph state (the candidate) and cost calls
    assert peer.trace == list(WALKTHROUGH) and peer.won and watch.off_policy == [False, False, False]
    assert peer.calls > 1 + 2 * len(WALKTHROUGH)  # planner, actor + critic per command, and the retry
    assert tally_peer(erring.injections, watch, ("hallucinated",))["hallucinated"] == {
        "injected": 1, "caught": 0, "harmful": 1, "to_game": 0, "stages": {}
    }  # fmt: skip


async def test_a_peer_sends_an_unchecked_error_to_the_game() -> None:
    pytest.importorskip("langgraph", reason="langgraph is not installed (pip install 'slateboard[peers]')")
    from slateboard_eval.textworld_peers import play_langgraph_lean

    # call 1: the actor's candidate, call 2: the critic erring too (a false claim is an approval)
    schedule = _seed_for({1: "hallucinated", 2: "false_claim"})
    watch = WatchedEnvironment(VaultGame())
    erring = ErringModel(
        WalkthroughModel(watch), schedule, episode="vault", format=format_for("langgraph-lean"), context=watch.context
    )
    peer = await play_langgraph_lean(watch, CountingModel(erring), max_commands=6)
    command = json.loads(erring.injections[0].text)["command"]
    assert json.loads(erring.injections[1].text) == {"approve": True, "reason": CLAIM}
    assert peer.trace[0] == command and peer.won and peer.commands == 4  # a wasted step
    assert watch.off_policy == [True, False, False, False]
    tally = tally_peer(erring.injections, watch, ("hallucinated", "false_claim"))
    assert tally["hallucinated"]["to_game"] == tally["false_claim"]["to_game"] == 1


def test_the_formats_render_the_same_content() -> None:
    from slateboard.models.erring import ErrorContent

    good_patch = json.dumps({"patch": [{"op": "add", "path": "/actions/-", "value": {"command": "go east"}}]})
    ours = SlateboardFormat().render(ErrorContent("false_claim", "actor", good_patch, None, HALLUCINATIONS[0]))
    theirs = PeerFormat().render(
        ErrorContent("false_claim", "actor", json.dumps({"command": "go east"}), None, HALLUCINATIONS[0])
    )
    loom = PeerFormat().render(ErrorContent("false_claim", "actor", "go east", None, HALLUCINATIONS[0]))
    assert json.loads(ours)["patch"][0]["value"]["command"] == json.loads(theirs)["command"] == loom == CLAIM
    off = SlateboardFormat().render(ErrorContent("off_contract", "actor", good_patch, None, HALLUCINATIONS[0]))
    assert json.loads(off)["patch"] == [{"op": "add", "path": "/plan", "value": ["go east"]}]
    assert json.loads(
        PeerFormat().render(ErrorContent("off_contract", "actor", json.dumps({"command": "go east"}), None, "x"))
    ) == {"plan": ["go east"]}


class GoldPathGame(VaultGame):
    """The vault with a fixed gold path, as TextWorldExpress and ScienceWorld have: once a
    command leaves it, the environment knows no walkthrough any more."""

    def __init__(self) -> None:
        super().__init__()
        self.path: list[str] = []

    async def reset(self) -> TextTurn:
        self.path = []
        return await super().reset()

    async def step(self, command: str) -> TextTurn:
        self.path.append(command)
        return await super().step(command)

    def policy(self) -> tuple[str, ...]:
        on_path = tuple(self.path) == WALKTHROUGH[: len(self.path)]
        return WALKTHROUGH[len(self.path) :] if on_path else ()


async def test_leaving_a_gold_path_makes_every_later_command_off_policy() -> None:
    watch = WatchedEnvironment(GoldPathGame())
    await watch.reset()
    for command in ("open door", "look", "go east", "take key"):
        await watch.step(command)
    assert watch.off_policy == [False, True, True, True] and watch.last is not None and watch.last.won
    calm = WatchedEnvironment(VaultGame())  # a policy from the state: back on it after a detour
    await calm.reset()
    for command in ("open door", "look", "go east", "take key"):
        await calm.step(command)
    assert calm.off_policy == [False, True, False, False]


async def test_calls_that_are_no_workers_are_left_out_of_the_mapping() -> None:
    # call 0 is no worker's (an Architect designing the blueprint), 1 the planner's, 2 the actor's
    schedule = _seed_for({0: "hallucinated", 2: "off_contract"})
    watch = WatchedEnvironment(VaultGame())
    erring = ErringModel(
        WalkthroughModel(watch), schedule, episode="vault", format=SlateboardFormat(), context=watch.context
    )
    await erring.generate([Message.system("Design a blueprint for the task."), Message.user("Take the key.")])
    store = await open_store("memory://")
    try:
        ep = await play_on_board(watch, store, model=CountingModel(erring), max_commands=6)
        records = await store.read_records(ep.result.board_id)
    finally:
        await store.close()
    assert erring.roles[:3] == ["model", "planner", "actor"] and ep.won
    tally = tally_board(erring.injections, records, watch, ("hallucinated", "off_contract"), erring.roles)
    assert tally["hallucinated"] == {"injected": 1, "caught": 0, "harmful": 0, "to_game": 0, "stages": {}}
    assert tally["off_contract"] == {"injected": 1, "caught": 1, "harmful": 0, "to_game": 0, "stages": {"schema": 1}}


class _Spy:
    """A model that records every request it answers (the prompts each call carried)."""

    def __init__(self, inner: WalkthroughModel) -> None:
        self.inner = inner
        self.requests: list[list[Message]] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    async def generate(self, messages: list[Message], **kwargs: object) -> object:
        self.requests.append(list(messages))
        return await self.inner.generate(messages, **kwargs)  # type: ignore[arg-type]


async def test_a_rejection_is_fed_back_once_and_not_after_the_retry_is_accepted() -> None:
    watch = WatchedEnvironment(VaultGame())
    spy = _Spy(WalkthroughModel(watch))
    schedule = _seed_for({1: "hallucinated"})
    erring = ErringModel(spy, schedule, episode="vault", format=SlateboardFormat(), context=watch.context)  # type: ignore[arg-type]
    store = await open_store("memory://")
    try:
        ep = await play_on_board(watch, store, model=CountingModel(erring), max_commands=6)
    finally:
        await store.close()
    assert ep.won
    users = [m.content for req in spy.requests for m in req if m.role == "user"]
    # call 0 plans (the executor issues its first step, "open door"), call 1 errs (rejected),
    # call 2 is the actor's retry, call 3 its next command
    assert "Your last proposals were rejected" in users[2] and "an admissible command" in users[2]
    assert len(users) == 4 and not any("rejected" in u for u in users[3:])
