"""Text environments on boards: a small env-agnostic protocol and the pieces that put one on a
``text_actor`` board.

* ``TextEnvironment`` / ``TextTurn``: what an environment offers (reset, step, objective,
  admissible commands, score, won/lost, walkthrough when known);
* ``EnvironmentWorker(env)``: the ``environment`` function worker of the text_actor template
  (``Runner(functions={"environment": EnvironmentWorker(env)})``): it executes the latest command
  and writes the observation, the admissible commands and the progress, so the board ends when
  the game is won or lost;
* ``AdmissibleActor``: the actor as an LLM worker whose command is decoded from the admissible
  commands; ``TurnVerifier``: the verifier, whose verdict is decoded with the step index and the
  statuses the kernel can accept;
* ``play_on_board(env, store, model=..., verifier="none"|"llm")``: one episode, start to end,
  on a new board of ``text_actor_blueprint(verifier)``;
* ``walkthrough_functions`` / ``WalkthroughModel``: followers of the environment's walkthrough,
  to prove a harness;
* ``slateboard_eval.envs.textworld``: TextWorld games (generation offline, a game as a
  TextEnvironment). Importing this package never imports TextWorld.
"""

from ._board import AdmissibleActor, EnvironmentWorker, TurnVerifier, board_inputs, latest_command
from ._episode import (
    VERIFIERS,
    BoardEpisode,
    VerifierMode,
    outcome_of,
    play_on_board,
    runner_steps_for,
    text_actor_blueprint,
)
from ._protocol import (
    MAX_OBSERVATION_CHARS,
    History,
    TextEnvironment,
    TextEnvironmentError,
    TextTurn,
    admissible_match,
    clip,
)
from ._walkthrough import WALKTHROUGH_MODEL, WalkthroughModel, walkthrough_functions

__all__ = [
    "MAX_OBSERVATION_CHARS",
    "VERIFIERS",
    "WALKTHROUGH_MODEL",
    "AdmissibleActor",
    "BoardEpisode",
    "EnvironmentWorker",
    "History",
    "TextEnvironment",
    "TextEnvironmentError",
    "TextTurn",
    "TurnVerifier",
    "VerifierMode",
    "WalkthroughModel",
    "admissible_match",
    "board_inputs",
    "clip",
    "latest_command",
    "outcome_of",
    "play_on_board",
    "runner_steps_for",
    "text_actor_blueprint",
    "walkthrough_functions",
]
