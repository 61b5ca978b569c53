"""The erring model in the text-game suites: each system's reply format, the environment
watch, and the per-kind tally of what became of every error (issue 34).

* ``SlateboardFormat`` renders an error as the text_actor LLM worker's reply (``{"patch": [...]}``)
  of the worker that errs; ``PeerFormat`` as the peers' replies (``{"command"}``, ``{"plan"}``,
  ``{"approve", "reason"}``, the supervisor's answer, or loomflow's plain text). Both carry the
  same content (``slateboard.models.erring.ErrorContent``): the same hallucinated command, the
  same claim, the other role's output.
* ``WatchedEnvironment`` wraps a TextEnvironment and notes, for every command executed, whether
  it was the walkthrough's next command (``off_policy``: a command the policy would not have
  sent, i.e. a step the error cost).
* ``tally_board`` (slateboard: every model call is one proposal record, so an error is *caught*
  when the kernel rejected that proposal, at the stage the record names, and *harmful* when it
  was accepted) and ``tally_peer`` (a peer has no check between the model's reply and its state,
  so nothing is caught and every error is harmful); for both, ``to_game`` counts the errors
  after which the environment executed an off-policy command in the same turn.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from slateboard.kernel import Record
from slateboard.models import Message
from slateboard.models.erring import ERROR_KINDS, ErrorContent, ErrorContext, Injection

from .envs import TextEnvironment, TextTurn
from .statistics import DEFAULT_RESAMPLES, bootstrap, merge_tallies, paired_bootstrap, tps_stat, wilson

__all__ = [
    "PeerFormat",
    "SlateboardFormat",
    "WatchedEnvironment",
    "empty_tally",
    "error_sweep",
    "format_for",
    "merge_tallies",
    "tally_board",
    "tally_peer",
]

_WORKER = re.compile(r"You are worker '([^']+)'")


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _command_in(value: Any) -> str | None:
    """The first ``command`` (else the first plan item) found in a decoded reply."""
    if isinstance(value, dict):
        if isinstance(value.get("command"), str):
            return str(value["command"])
        for v in value.values():
            found = _command_in(v)
            if found:
                return found
    if isinstance(value, list):
        for v in value:
            found = _command_in(v) if not isinstance(v, str) else v
            if found:
                return found
    return None


def _command_of(reply: Any) -> str | None:
    """``_command_in``, where a reply that is a string is the command itself (the typed
    actor's bare command)."""
    return (reply or None) if isinstance(reply, str) else _command_in(reply)


def _patch(*ops: dict[str, Any]) -> str:
    return json.dumps({"patch": list(ops)}, separators=(",", ":"))


class SlateboardFormat:
    """The text_actor LLM workers' replies. The role is the worker the prompt names.

    ==============  ===================================  ===================================  ==========================
    kind            actor                                planner                              verifier
    ==============  ===================================  ===================================  ==========================
    hallucinated    ``/actions/-`` the invented command  ``/plan`` ``[command]``              a verdict on a step that
                                                                                              does not exist
    false_claim     ``/actions/-`` the claim             ``/plan`` ``[claim]``                ``success`` with the claim
    off_contract    ``/plan`` (the planner's field)      ``/actions/-`` (the actor's field)   ``/actions/-``
    ==============  ===================================  ===================================  ==========================
    """

    def role(self, messages: Sequence[Message], json_schema: Mapping[str, Any] | None) -> str:
        """The worker named by the system prompt (``model`` when none is)."""
        system = next((m.content for m in messages if m.role == "system"), "")
        found = _WORKER.search(system)
        return found.group(1) if found else "model"

    def render(self, error: ErrorContent) -> str:
        """The reply that carries ``error`` (see the class): a patch, or for a typed worker
        (its good reply is a value, not a patch) the value the patch would add (the command
        alone where the good reply is a bare command); an
        ``off_contract`` error stays a patch on the other worker's field (a typed worker's
        schema rejects it)."""
        text = self._patch_reply(error)
        decoded = _json(error.good)
        if error.kind == "off_contract" or (isinstance(decoded, dict) and "patch" in decoded):
            return text
        ops = _json(text)["patch"]
        value = ops[0]["value"]
        if isinstance(decoded, str) and isinstance(value, dict) and "command" in value:
            value = value["command"]  # the good reply was a bare command: so is the error
        return json.dumps(value, separators=(",", ":"))

    def _patch_reply(self, error: ErrorContent) -> str:
        good = _command_of(_json(error.good)) or "look"
        if error.role == "planner":
            if error.kind == "off_contract":
                return _patch({"op": "add", "path": "/actions/-", "value": {"command": good}})
            item = error.command if error.kind == "hallucinated" else error.claim
            return _patch({"op": "add", "path": "/plan", "value": [item]})
        if error.role == "verifier":
            if error.kind == "off_contract":
                return _patch({"op": "add", "path": "/actions/-", "value": {"command": good}})
            step = _verdict_step(error.good)
            if error.kind == "hallucinated":
                verdict = {"step": step + 1, "status": "continue", "reason": f"after {error.command}"}
            else:
                verdict = {"step": step, "status": "success", "reason": error.claim}
            return _patch({"op": "add", "path": "/verdicts/-", "value": verdict})
        if error.kind == "off_contract":
            return _patch({"op": "add", "path": "/plan", "value": [good]})
        command = error.command if error.kind == "hallucinated" else error.claim
        return _patch({"op": "add", "path": "/actions/-", "value": {"command": command}})


def _verdict_step(good: str) -> int:
    decoded = _json(good)
    patch = decoded.get("patch") if isinstance(decoded, dict) else None
    for op in patch if isinstance(patch, list) else []:
        value = op.get("value") if isinstance(op, dict) else None
        if isinstance(value, dict) and isinstance(value.get("step"), int):
            return int(value["step"])
    return 0


class PeerFormat:
    """The peers' replies (langgraph-lean, langgraph, loomflow), by the shape asked for.

    ==============  ==========================  ====================  ===========================  =====================
    kind            actor / supervisor answer   planner               critic                       plain text (loomflow)
    ==============  ==========================  ====================  ===========================  =====================
    hallucinated    ``{"command": command}``    ``{"plan": [cmd]}``   rejects, citing the command  the command
    false_claim     ``{"command": claim}``      ``{"plan": [claim]}`` approves, with the claim     the claim
    off_contract    ``{"plan": [its command]}`` ``{"command": ...}``  ``{"plan": [its reason]}``   "Plan: " + its reply
    ==============  ==========================  ====================  ===========================  =====================
    """

    def role(self, messages: Sequence[Message], json_schema: Mapping[str, Any] | None) -> str:
        """``supervisor``, ``actor``, ``planner`` or ``critic`` from the schema; for a request
        without one (loomflow), ``planner`` or ``actor`` from its system prompt."""
        if json_schema is not None:
            if isinstance(json_schema.get("anyOf"), list):
                return "supervisor"
            props = json_schema.get("properties")
            keys = set(props) if isinstance(props, Mapping) else set()
            for key, role in (("command", "actor"), ("plan", "planner"), ("approve", "critic")):
                if key in keys:
                    return role
            return "model"
        system = " ".join(m.content for m in messages if m.role == "system").lower()
        if "you are the planner" in system:
            return "planner"
        if "you are the actor" in system:
            return "actor"
        return "model"

    def render(self, error: ErrorContent) -> str:
        """The reply that carries ``error`` (see the class)."""
        decoded = _json(error.good)
        if not isinstance(decoded, dict):
            if error.kind == "off_contract":
                return f"Plan: {error.good}"
            return error.command if error.kind == "hallucinated" else error.claim
        item = error.command if error.kind == "hallucinated" else error.claim
        if "plan" in decoded:
            if error.kind == "off_contract":
                return json.dumps({"command": _command_in(decoded) or "look"})
            return json.dumps({"plan": [item]})
        if "approve" in decoded:
            if error.kind == "off_contract":
                return json.dumps({"plan": [str(decoded.get("reason", "check"))]})
            if error.kind == "hallucinated":
                return json.dumps({"approve": False, "reason": f"first {error.command}"})
            return json.dumps({"approve": True, "reason": error.claim})
        if error.kind == "off_contract":
            return json.dumps({"plan": [_command_in(decoded) or "look"]})
        return json.dumps({"command": item})


def format_for(system: str) -> SlateboardFormat | PeerFormat:
    """The reply format of ``system`` (slateboard's for ``slateboard``, the peers' otherwise)."""
    return SlateboardFormat() if system == "slateboard" else PeerFormat()


@dataclass
class WatchedEnvironment:
    """A TextEnvironment that notes, for each command executed since the last reset, whether
    it was the walkthrough's next command (``off_policy``, by index). Where the environment
    knows no walkthrough from the start, no command is off-policy; where it knew one and lost it
    (a gold path left), every later command is. Everything else is ``env``'s."""

    env: TextEnvironment
    off_policy: list[bool] = field(default_factory=list)
    _known: bool = field(default=False, repr=False)

    @property
    def name(self) -> str:
        """The wrapped environment's name."""
        return self.env.name

    @property
    def objective(self) -> str:
        """The wrapped environment's objective."""
        return self.env.objective

    @property
    def commands(self) -> int:
        """Commands executed since the last reset."""
        return self.env.commands

    @property
    def last(self) -> TextTurn | None:
        """The latest turn."""
        return self.env.last

    async def reset(self) -> TextTurn:
        """A fresh episode (the notes start over)."""
        self.off_policy = []
        self._known = False
        return await self.env.reset()

    async def step(self, command: str) -> TextTurn:
        """Execute ``command``, noting whether the walkthrough would have sent it. An
        environment that follows a fixed gold path (TextWorldExpress, ScienceWorld) knows no
        walkthrough once a command left that path: every command after that is off-policy."""
        policy = self.env.policy()
        if policy:
            self._known = True
            off = command.strip().lower() != policy[0].strip().lower()
        else:
            off = self._known
        self.off_policy.append(off)
        return await self.env.step(command)

    def policy(self) -> tuple[str, ...]:
        """The wrapped environment's walkthrough from here."""
        return self.env.policy()

    def close(self) -> None:
        """Close the wrapped environment."""
        self.env.close()

    def context(self) -> ErrorContext:
        """What the erring model is told at a call: the turn and the admissible commands."""
        last = self.env.last
        return ErrorContext(self.env.commands, tuple(last.admissible) if last is not None else ())

    def off_at(self, turn: int) -> bool:
        """True when the command executed at ``turn`` (0-based) was off-policy."""
        return 0 <= turn < len(self.off_policy) and self.off_policy[turn]

    def __getattr__(self, name: str) -> Any:
        # attributes beyond the protocol (a game's gold path, its spec) stay the wrapped one's
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)


def empty_tally(kinds: Sequence[str] = ERROR_KINDS) -> dict[str, dict[str, Any]]:
    """``{kind: {"injected": 0, "caught": 0, "harmful": 0, "to_game": 0, "stages": {}}}``."""
    return {k: {"injected": 0, "caught": 0, "harmful": 0, "to_game": 0, "stages": {}} for k in kinds}


def tally_board(
    injections: Sequence[Injection],
    records: Sequence[Record],
    watch: WatchedEnvironment,
    kinds: Sequence[str],
    roles: Sequence[str] = (),
) -> dict[str, dict[str, Any]]:
    """What became of each error on a slateboard board: the proposal of the model call it
    replaced (each worker's call is one proposal record carrying model usage, in call order)
    was rejected (``caught``, counted per stage) or accepted (``harmful``; ``to_game`` too when
    the command then executed at that turn was off-policy); a no-op is neither. ``roles`` (the
    erring model's, every call's role) leaves out calls that are no worker's (role ``model``:
    the Architect designing a generated blueprint): an error there is counted as injected only."""
    proposals = [r for r in records if r.kind == "proposal" and r.usage.tokens_in > 0]
    worker_calls = [i for i, role in enumerate(roles) if role != "model"] if roles else None
    position = {call: n for n, call in enumerate(worker_calls)} if worker_calls is not None else None
    tally = empty_tally(kinds)
    for inj in injections:
        entry = tally[inj.kind]
        entry["injected"] += 1
        n = inj.call if position is None else position.get(inj.call)
        rec = proposals[n] if n is not None and n < len(proposals) else None
        if rec is None:
            continue
        if rec.outcome == "rejected":
            entry["caught"] += 1
            stage = str(rec.stage)
            entry["stages"][stage] = entry["stages"].get(stage, 0) + 1
        elif rec.outcome == "accepted":
            entry["harmful"] += 1
            entry["to_game"] += int(watch.off_at(inj.turn))
    return tally


def tally_peer(
    injections: Sequence[Injection], watch: WatchedEnvironment, kinds: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """What became of each error in a peer: nothing checks a reply before the system keeps it
    (graph state, the supervisor's thread, the board), so every error is ``harmful`` and none
    ``caught``; ``to_game`` when the command executed at its turn was off-policy."""
    tally = empty_tally(kinds)
    for inj in injections:
        entry = tally[inj.kind]
        entry["injected"] += 1
        entry["harmful"] += 1
        entry["to_game"] += int(watch.off_at(inj.turn))
    return tally


def error_sweep(
    runs: Sequence[tuple[float, Sequence[Mapping[str, Any]]]],
    *,
    reference: str = "slateboard",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """The error-rate sweep of episode rows (``EpisodeResult.to_json()``), one run per rate.

    Per (system, rate): games, wins, success with its Wilson interval, tokens per success with
    a bootstrap interval over games, the off-policy commands and the per-kind error tally; for
    every system but ``reference``, ``reference_tps_ratio``: the reference's tokens per success
    divided by this system's at the same rate, with a paired bootstrap interval over the games
    both played (the same resampled games for both); ``cost_usd`` (the rows' ``cost_usd`` summed,
    None when any is unknown or missing) and ``cost_per_success`` over the wins. Seeded: the same
    rows give the same report."""
    from .cost import cost_per_success, total_cost

    entries: list[dict[str, Any]] = []
    for rate, rows in runs:
        systems = list(dict.fromkeys(str(r["system"]) for r in rows))
        by_system = {s: sorted((r for r in rows if r["system"] == s), key=lambda r: str(r["game"])) for s in systems}
        ref = {str(r["game"]): r for r in by_system.get(reference, [])}
        for system in systems:
            rs = by_system[system]
            x = np.asarray([[float(bool(r["won"])), float(r["tokens"])] for r in rs], dtype=float).reshape(-1, 2)
            wins = int(x[:, 0].sum()) if len(rs) else 0
            entry: dict[str, Any] = {
                "system": system,
                "error_rate": rate,
                "games": len(rs),
                "wins": wins,
                "success": wilson(wins, len(rs)).to_json(),
                "tokens_per_success": bootstrap(x, tps_stat(1, 0), resamples=resamples, seed=seed).to_json(1),
                "off_policy": sum(int(r.get("off_policy") or 0) for r in rs),
                "model_errors": merge_tallies([r.get("model_errors") or {} for r in rs]),
            }
            entry["cost_usd"] = total_cost(r.get("cost_usd") for r in rs)
            entry["cost_per_success"] = cost_per_success(entry["cost_usd"], wins)
            if system != reference and ref:
                pairs = [(ref[str(r["game"])], r) for r in rs if str(r["game"]) in ref]
                a = [[float(bool(p[1]["won"])), float(p[1]["tokens"])] for p in pairs]
                b = [[float(bool(p[0]["won"])), float(p[0]["tokens"])] for p in pairs]
                ratio = paired_bootstrap(a, b, tps_stat(1, 0), ratio=True, resamples=resamples, seed=seed)
                entry["reference_tps_ratio"] = ratio.to_json()
            entries.append(entry)
    return {
        "reference": reference,
        "rates": [rate for rate, _ in runs],
        "confidence": 0.95,
        "resamples": resamples,
        "systems": entries,
    }
