"""The four systems of the fault-injection suite, each running the scripted task once per call.

* ``slateboard``: the real ``Runner`` on a board of the ``claim_verification`` template in a
  store, every LLM worker backed by ``ScriptedBoardModel`` (a slateboard ``Model`` that reads the
  worker and its triggering event from the prompt and answers from the ``Script``). Control is
  the template's rules and the agenda; the kernel decides; the committed state is rebuilt from
  the store afterwards.
* ``json_control``: a structured JSON blackboard written here: an entry is accepted when it
  parses as JSON, nothing more. A scripted coordinator picks the next worker.
* ``loomflow``: the plain blackboard ``loomflow.team.Team.blackboard`` (seed 001), its agents, its
  coordinator and its decider backed by a loomflow ``Model`` answering from the ``Script``. The
  committed board is read from the decider's prompt, where loomflow renders it in full.
* ``langgraph``: a supervisor ``StateGraph``: the supervisor node's model names the next worker,
  each worker node's model reply is parsed with LangChain's ``JsonOutputParser`` and returned as
  the node's state update (``claims`` and ``evidence`` merged by id, other keys last-value); the
  committed state is the final checkpoint of an ``InMemorySaver``.

Every system gets the same step budget (``MAX_STEPS`` worker calls) and the same contents, each
in its natural form: a JSON Patch reply (slateboard, loomflow's reply text, the JSON control's
entry) or the equivalent state update (LangGraph).
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from slateboard.kernel.pointer import MISSING, PointerError, resolve
from slateboard.models.protocol import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TEMPERATURE,
    DEFAULT_TIMEOUT,
    Generation,
    GenerationUsage,
    Message,
)

from .faults_task import (
    DOCUMENT,
    MAX_STEPS,
    WORKERS,
    Injection,
    Script,
    fold_board,
    ops_to_update,
    patch_text,
    step_for,
)

if TYPE_CHECKING:
    from slateboard.blueprint.compile import CompiledBlueprint
    from slateboard.stores.base import Store

__all__ = [
    "PEERS",
    "SYSTEMS",
    "JsonBoard",
    "ScriptedBoardModel",
    "SystemOutcome",
    "missing",
    "run_json_control",
    "run_langgraph",
    "run_loomflow",
    "run_slateboard",
]

SYSTEMS = ("slateboard", "loomflow", "json_control", "langgraph")
"""Every system, in table order."""
PEERS = ("loomflow", "langgraph")
"""Systems that need the ``peers`` extra."""


@dataclass(frozen=True, slots=True)
class SystemOutcome:
    """What one run of the scripted task left behind.

    ``committed`` is the committed document the detector reads; ``end_reason`` why the run
    stopped; ``calls`` the worker replies given; ``onset``/``fault_call`` as in ``Script``;
    ``decision`` how the system took the faulty reply where it says (slateboard: the record's
    outcome and stage; the JSON control: accepted or refused), else None.
    """

    committed: Any
    end_reason: str
    calls: int
    onset: int | None
    fault_call: int | None
    decision: str | None = None


def missing(system: str) -> str | None:
    """None when ``system`` can run here, else why not (for the printed skip reason)."""
    needs = {"loomflow": ("loomflow",), "langgraph": ("langgraph", "langchain_core")}.get(system, ())
    for module in needs:
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install 'slateboard-eval[peers]')"
    return None


# -- slateboard -----------------------------------------------------------------------------------
_WORKER = re.compile(r"You are worker '([^']+)'")


def _event_value(prompt: str) -> Any:
    """The value the triggering event of a worker prompt points at, looked up in the view's data
    (which maps read paths to values); None when the event or the value is not there.

    Reads both forms a worker prompt shows its view in (``slateboard.workers.prompt.view_payload``):
    the view's JSON on one line (unconstrained decoding), or ``pointer = value`` lines plus an
    ``event: OP PATH`` line (contract-constrained decoding)."""
    data: dict[str, Any] = {}
    path: str | None = None
    for line in prompt.split("\n"):
        if line.startswith("{"):
            try:
                view = json.loads(line)
            except ValueError:
                continue
            if not isinstance(view, dict) or not isinstance(view.get("data"), dict):
                continue
            event = view.get("event")
            found = event.get("path") if isinstance(event, dict) else None
            return _at(view["data"], found) if isinstance(found, str) else None
        if line.startswith("event: "):
            _, _, found = line[len("event: ") :].partition(" ")
            path = found or None
        elif line.startswith("/") and " = " in line:
            pointer, _, text = line.partition(" = ")
            try:
                data[pointer] = json.loads(text)
            except ValueError:
                data[pointer] = text  # strings are shown as their text
    return _at(data, path) if path is not None else None


def _at(data: dict[str, Any], path: str) -> Any:
    """The value at ``path`` inside the view data entry whose read path is a prefix of it."""
    for prefix, value in data.items():
        if not path.startswith(prefix + "/"):
            continue
        try:
            node = resolve(value, path[len(prefix) :])
        except PointerError:
            return None
        return None if node is MISSING else node
    return None


class ScriptedBoardModel:
    """A slateboard ``Model`` that answers each worker from a ``Script``.

    It reads the worker from the system message and the item it acts on from the value the
    triggering event points at in its view (researcher: the added claim's id; verifier: the
    added evidence's claim; a circuit retry: the item of that worker's previous call), and
    returns ``Script.reply`` for that trajectory step as ``{"patch": [...]}`` text (an empty
    patch for an unknown step). Usage is the estimate every scripted model reports.
    """

    def __init__(self, script: Script) -> None:
        self.script = script
        self._last: dict[str, str] = {}

    @property
    def name(self) -> str:
        """The model string."""
        return "faults-script"

    def _item(self, worker: str, value: Any) -> str | None:
        if worker == "extractor":
            return "claims"
        if worker == "reporter":
            return "report"
        key = "id" if worker == "researcher" else "claim"
        if isinstance(value, dict) and isinstance(value.get(key), str):
            self._last[worker] = value[key]
        return self._last.get(worker)

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = DEFAULT_TEMPERATURE,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> Generation:
        """The scripted reply for the calling worker; see the class."""
        found = _WORKER.search(messages[0].content if messages else "")
        worker = found.group(1) if found else ""
        step = step_for(worker, self._item(worker, _event_value(messages[-1].content if messages else "")))
        text = self.script.reply(patch_text, step)
        return Generation(text, GenerationUsage.estimate(messages, text), "stop", self.name, 0.0)


_TEMPLATE: CompiledBlueprint | None = None
_COMPILED: dict[str, CompiledBlueprint] = {}


def _template() -> CompiledBlueprint:
    global _TEMPLATE
    if _TEMPLATE is None:
        from slateboard.blueprint.templates import load_template

        _TEMPLATE = load_template("claim_verification")
    return _TEMPLATE


def _compiled(spec: dict[str, Any]) -> CompiledBlueprint:
    """The stored blueprint compiled, once per distinct blueprint (every board of the suite
    stores the same one; compiling its CEL is the slow part)."""
    from slateboard.blueprint.compile import compile_blueprint

    key = json.dumps(spec, sort_keys=True)
    if key not in _COMPILED:
        _COMPILED[key] = compile_blueprint(spec)
    return _COMPILED[key]


async def run_slateboard(
    injection: Injection | None, store: Store, *, blueprint: CompiledBlueprint | None = None
) -> SystemOutcome:
    """One run on slateboard: a new board in ``store`` (the ``claim_verification`` template, or
    ``blueprint``: tests pass a deliberately unprotected one), the Runner with the scripted
    model, and the committed state rebuilt from the store (snapshot plus the replayed log tail,
    which must verify)."""
    from slateboard.runtime import Runner, create_board
    from slateboard.runtime.runner import kernel_from

    script = Script(injection)
    board = await create_board(store, blueprint or _template(), task=DOCUMENT)
    result = await Runner(store, board, model=ScriptedBoardModel(script)).run()
    loaded = await store.load_board(board)
    committed = kernel_from(_compiled(loaded.blueprint), loaded).state
    decision = None
    if script.fault_call is not None:
        proposals = [r for r in await store.read_records(board) if r.kind == "proposal"]
        if len(proposals) == script.calls:  # one proposal per model call (parallel=1)
            rec = proposals[script.fault_call - 1]
            decision = rec.outcome if rec.outcome == "accepted" else f"{rec.outcome}:{rec.stage}"
    return SystemOutcome(committed, result.end_reason, script.calls, script.onset, script.fault_call, decision)


# -- the structured JSON control ------------------------------------------------------------------
class JsonBoard:
    """The structured JSON blackboard control: an entry is kept when its text parses as JSON
    (``json.loads``), refused otherwise; nothing else is checked (no schema, no contract)."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, str, Any]] = []
        self.refused = 0

    def post(self, author: str, text: str) -> bool:
        """Append ``author``'s entry if it is JSON; False (and counted) when it is not."""
        try:
            value = json.loads(text)
        except ValueError:
            self.refused += 1
            return False
        self.entries.append((author, "contribution", value))
        return True


async def run_json_control(injection: Injection | None) -> SystemOutcome:
    """One run on the JSON control: the scripted coordinator picks, the worker's reply is posted
    as an entry, until the coordinator ends the run or the step budget is spent."""
    script = Script(injection)
    board = JsonBoard()
    end = "max_steps"
    decision = None
    for _ in range(MAX_STEPS):
        worker = script.next_worker()
        if worker is None:
            end = "terminated"
            break
        before = script.fault_call
        kept = board.post(worker, script.reply(patch_text))
        if before is None and script.fault_call is not None:
            decision = "accepted" if kept else "refused"
    return SystemOutcome(fold_board(board.entries), end, script.calls, script.onset, script.fault_call, decision)


# -- loomflow -------------------------------------------------------------------------------------
_LINE = re.compile(r"^\[([^\]]*)\] ([^:]*): (.*)$")


def _board_from_prompt(prompt: str) -> list[tuple[str, str, str]]:
    """The public entries loomflow rendered into a prompt (``[kind] author: content`` lines)."""
    _, _, text = prompt.partition("Full blackboard state:\n")
    entries: list[tuple[str, str, str]] = []
    public = False
    for line in text.split("\n"):
        if line == "=== Public board ===":
            public = True
            continue
        if line.startswith("=== "):
            public = False
            continue
        if not public:
            continue
        m = _LINE.match(line)
        if m:
            entries.append((m.group(2), m.group(1), m.group(3)))
        elif entries:  # a content with a newline continues on the next line
            author, kind, content = entries[-1]
            entries[-1] = (author, kind, content + "\n" + line)
    return entries


class _LoomModel:
    """A loomflow ``Model`` (``stream`` and ``complete``) answering with ``answer(messages)``."""

    name = "faults-script"

    def __init__(self, answer: Any) -> None:
        self._answer = answer

    async def complete(
        self,
        messages: list[Any],
        *,
        tools: Any = None,
        temperature: float = 1.0,
        max_tokens: int | None = None,
        output_schema: Any = None,
        effort: str | None = None,
        strict_effort: bool = False,
        prompt_caching: Any = None,
    ) -> tuple[str, list[Any], Any, str]:
        from loomflow.core.types import Usage as LoomUsage

        return str(self._answer(messages)), [], LoomUsage(), "stop"

    async def stream(
        self,
        messages: list[Any],
        *,
        tools: Any = None,
        temperature: float = 1.0,
        max_tokens: int | None = None,
        output_schema: Any = None,
        effort: str | None = None,
        strict_effort: bool = False,
        prompt_caching: Any = None,
    ) -> Any:
        from loomflow.core.types import ModelChunk
        from loomflow.core.types import Usage as LoomUsage

        text, _, usage, reason = await self.complete(messages)
        yield ModelChunk(kind="text", text=text)
        yield ModelChunk(kind="finish", finish_reason=reason, usage=usage or LoomUsage())


async def run_loomflow(injection: Injection | None) -> SystemOutcome:
    """One run on loomflow's ``Team.blackboard`` with a scripted coordinator, four scripted
    agents and a decider whose prompt shows the final board."""
    from loomflow import Agent
    from loomflow.team import Team

    script = Script(injection)
    ended: list[bool] = []
    decider_prompts: list[str] = []

    def coordinate(messages: list[Any]) -> str:
        worker = script.next_worker()
        if worker is None:
            ended.append(True)
        return json.dumps({"terminate": worker is None, "next_agent": worker, "instruction": None})

    def decide(messages: list[Any]) -> str:
        decider_prompts.extend(str(getattr(m, "content", "")) for m in messages)
        return "done"

    worker_model = _LoomModel(lambda messages: script.reply(patch_text))
    agents = {
        w: Agent(instructions=f"You are the {w} of a claim-verification team.", model=worker_model) for w in WORKERS
    }
    team = Team.blackboard(
        agents,
        coordinator=Agent(instructions="Pick the next agent.", model=_LoomModel(coordinate)),
        decider=Agent(instructions="Write the final answer.", model=_LoomModel(decide)),
        model=_LoomModel(lambda messages: "unused"),
        max_rounds=MAX_STEPS,
    )
    await team.run(DOCUMENT)
    prompt = next((p for p in reversed(decider_prompts) if "Full blackboard state:" in p), "")
    if not prompt:
        raise RuntimeError("loomflow's decider was not shown the board; cannot read the committed state")
    committed = fold_board(_board_from_prompt(prompt))
    end = "terminated" if ended else "max_rounds"
    return SystemOutcome(committed, end, script.calls, script.onset, script.fault_call)


# -- LangGraph ------------------------------------------------------------------------------------
def merge_by_id(left: Any, right: Any) -> list[Any]:
    """LangGraph reducer of the ``claims`` and ``evidence`` channels: items of the update with an
    ``id`` already present are merged into that item (``dict.update``), others appended."""
    out: list[Any] = [dict(x) if isinstance(x, dict) else x for x in (left if isinstance(left, list) else [])]
    for item in right if isinstance(right, list) else [right]:
        if isinstance(item, dict) and "id" in item:
            for x in out:
                if isinstance(x, dict) and x.get("id") == item["id"]:
                    x.update(item)
                    break
            else:
                out.append(dict(item))
        else:
            out.append(item)
    return out


# Functional form: the annotations must be real objects (this module uses postponed annotations).
_GraphState = TypedDict(  # noqa: UP013
    "_GraphState",
    {
        "document": str,
        "claims": Annotated[list[Any], merge_by_id],
        "evidence": Annotated[list[Any], merge_by_id],
        "report": Any,
        "next": str,
    },
    total=False,
)


async def run_langgraph(injection: Injection | None) -> SystemOutcome:
    """One run on a LangGraph supervisor graph (see the module docstring)."""
    from langchain_core.exceptions import OutputParserException
    from langchain_core.output_parsers import JsonOutputParser
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.errors import GraphRecursionError
    from langgraph.graph import END, START, StateGraph

    script = Script(injection)
    parser = JsonOutputParser()

    def parse(text: str) -> Any:
        try:
            return parser.parse(text)
        except OutputParserException:
            return None

    async def supervisor(state: Any) -> dict[str, Any]:
        worker = script.next_worker()
        decided = parse(json.dumps({"next": worker or "FINISH"}))
        return {"next": decided["next"]}

    def worker_node(name: str) -> Any:
        async def node(state: Any) -> dict[str, Any]:
            text = script.reply(lambda ops: json.dumps(ops_to_update(ops, dict(state))))
            update = parse(text)
            return update if isinstance(update, dict) else {}

        return node

    graph = StateGraph(_GraphState)
    graph.add_node("supervisor", supervisor)
    for w in WORKERS:
        graph.add_node(w, worker_node(w))
        graph.add_edge(w, "supervisor")
    graph.add_edge(START, "supervisor")
    graph.add_conditional_edges("supervisor", lambda s: END if s["next"] == "FINISH" else s["next"], [*WORKERS, END])
    app = graph.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "faults"}, "recursion_limit": 2 * MAX_STEPS + 1}
    end = "terminated"
    try:
        await app.ainvoke({"document": DOCUMENT, "claims": [], "evidence": []}, config)
    except GraphRecursionError:
        end = "recursion_limit"
    committed = dict(app.get_state(config).values)
    return SystemOutcome(committed, end, script.calls, script.onset, script.fault_call)
