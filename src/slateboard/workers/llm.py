"""LLM workers: prompt a model with the view, read its patch tolerantly, optionally call tools.

Decoding modes (``decoding``):

* ``"contract"`` (default): the reply is constrained by the schema of the proposals the worker
  may make now (``slateboard.workers.constrain``), derived from its write contract, the schema
  fragments and the current state; falls back to ``"json"`` when that schema is empty.
* ``"json"``: the reply is constrained to the generic ``{"patch": [RFC 6902 ops]}`` shape only.
* ``"none"``: free text (no ``json_schema`` is sent).

A worker with a typed ``output`` (``WorkerSpec.output``, the builder's ``output_type=``) replies
with one JSON value instead of a patch: it is decoded against the state schema at that pointer
(``decoding`` ``"output"``, unless ``"none"``), and the worker proposes adding it there, so the
kernel checks it at stage ``schema`` and a rejection comes back as the next attempt's feedback.

The state used to expand write patterns comes from ``state`` (a zero-argument callable returning
the committed state, e.g. ``lambda: kernel.state``) or, without one, from a sketch of what the
view shows (``constrain.sketch_state``): then only paths the worker can see, or whose parents the
schema requires, are offered.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .. import telemetry
from ..kernel.canonical import JSON
from ..kernel.pointer import parse_pointer
from ..kernel.record import Usage
from ..kernel.schema import pattern_locations
from ..models import Generation, Message, Model, ModelError, ModelSchemaRefused, resolve_model, streamed
from ..models.pricing import SpendRefused
from ..redaction import redact
from ..views import readable_state
from .base import (
    DEFAULT_COMPONENT,
    Feedback,
    WorkerConfigError,
    WorkerReply,
    generation_usage,
    jsonable,
    sum_usage,
)
from .constrain import DEFAULT_MAX_OPS, generic_patch_schema, proposal_schema, self_contained, sketch_state
from .parse import ParsedReply, parse_reply, parse_value, reply_fault
from .prompt import PromptBlock, join_blocks, prompt_accounting, prompt_blocks, prompt_parts, split_tokens, view_payload
from .tools import Tool, ToolResult, as_tool, quarantine_target


class SpendHook(Protocol):
    """What a worker reserves each model call against (``runtime.ledger.SpendGuard``)."""

    async def reserve(self, model: str, prompt_tokens: int, max_tokens: int) -> float: ...
    async def settle(self, model: str, reserved: float, usage: tuple[int, int] | None) -> float: ...


def prompt_token_bound(messages: Sequence[Message]) -> int:
    """An upper bound on a prompt's tokens: its UTF-8 bytes (no tokenizer makes a token of less
    than a byte) plus a few per message for the role framing."""
    return sum(len(m.content.encode("utf-8")) + 8 for m in messages)


WORST_CASE_SETTLED = "worst case: the provider reported no usage"
"""What a record's ``spend_settled`` says when a call was booked at its reserved worst case."""


async def guarded_call(
    spend: SpendHook | None,
    model: str,
    messages: Sequence[Message],
    max_tokens: int,
    call: Callable[[], Awaitable[Generation]],
) -> tuple[Generation, str | None]:
    """Make one model call under a spend hook (issue 33), the one place every model call of a
    Runner's LLM worker, a team's agents, coordinator and decider goes through: the call's worst
    case (``prompt_token_bound`` + ``max_tokens``) is reserved first, and a refused reservation
    raises ``SpendRefused`` (a ``ModelError``) before ``call`` runs, so no request is sent. The
    reservation is settled with the reported usage, or at the worst case when the call failed or
    the provider reported none; the second value is then ``WORST_CASE_SETTLED`` (for the record),
    else None. With ``spend=None`` it is just ``await call()``."""
    if spend is None:
        return await call(), None
    reserved = await spend.reserve(model, prompt_token_bound(messages), max_tokens)
    try:
        gen = await call()
    except BaseException:
        await spend.settle(model, reserved, None)  # the provider may have billed it
        raise
    if gen.usage.estimated:
        await spend.settle(model, reserved, None)
        return gen, WORST_CASE_SETTLED
    await spend.settle(model, reserved, (gen.usage.prompt_tokens, gen.usage.completion_tokens))
    return gen, None


if TYPE_CHECKING:
    from ..blueprint.compile import CompiledBlueprint
    from ..views import View

__all__ = ["DEFAULT_MAX_TOOL_CALLS", "DEFAULT_WORKER_MAX_TOKENS", "Decoding", "LLMWorker", "output_value_schema"]

logger = logging.getLogger("slateboard.workers")

Decoding = Literal["contract", "json", "none"]
DEFAULT_WORKER_MAX_TOKENS = 384
DEFAULT_MAX_TOOL_CALLS = 4


def output_value_schema(blueprint: CompiledBlueprint, output: str) -> dict[str, Any]:
    """The state schema at pointer ``output`` as one self-contained schema (its ``$ref`` targets
    hoisted into ``$defs``): what a typed worker's reply is decoded against."""
    found = pattern_locations(blueprint.schema, parse_pointer(output))
    node = found[0].schema if found else {}
    if isinstance(node, dict):
        # An optional field (``T | None``): the reply is the value, so the decoder is not
        # offered null; the kernel still checks the state's own schema.
        for key in ("anyOf", "oneOf"):
            branches = node.get(key)
            if isinstance(branches, list) and {"type": "null"} in branches:
                kept = [b for b in branches if b != {"type": "null"}]
                rest = {k: v for k, v in node.items() if k not in (key, "default")}
                node = {**rest, **kept[0]} if len(kept) == 1 and not rest else {**rest, key: kept}
                break
    out = self_contained(blueprint.spec.state_schema, node)
    ref = out.get("$ref")
    defs = out.get("$defs")
    if set(out) == {"$ref", "$defs"} and isinstance(ref, str) and isinstance(defs, dict):
        # The model itself at the root (providers' strict modes want an object there); its
        # definition stays in $defs for references inside it.
        target = defs.get(ref.removeprefix("#/$defs/"))
        if isinstance(target, dict):
            out = {**target, "$defs": defs}
    return out


class LLMWorker:
    """A worker backed by a chat model (see the module docstring for the decoding modes).

    When the provider refuses the reply schema itself (``ModelSchemaRefused``: classified by the
    provider's error code, never guessed from a bare 400), the call is repeated once without a schema and later calls send none (decoding
    ``"none"``, with ``diagnostics["schema_refused"]``): structured output is used where it can be.

    ``max_ops`` bounds the operations of one proposal under constrained decoding (default: 1 for
    the in-process ``local`` model, DEFAULT_MAX_OPS otherwise).

    A typed worker states its value schema in the prompt in full, since a provider may not
    constrain decoding; ``output_hint=True`` asks instead with a one-line hint naming the
    pointer while the reply is decoded against the schema (as ``contract`` decoding does for a
    patch), and states it again if the provider refuses schemas.

    Guarantees: ``propose`` never raises for a model failure (any ``ModelError`` or timeout):
    it returns a reply whose patch is the raw text so far (``""`` when there is none) with
    ``diagnostics["model_error"]`` set to the provider's error, which the kernel rejects at stage
    ``model`` with that error as the reason (``diagnostics["error"]``/``["error_type"]`` too, and
    the error logged). Usage sums every model call of the invocation (tool rounds included) and carries
    ``component``. Prompts are deterministic functions of the inputs.
    """

    kind = "llm"

    def __init__(
        self,
        blueprint: CompiledBlueprint,
        name: str,
        model: Model | str | None = None,
        *,
        decoding: Decoding = "contract",
        state: Callable[[], JSON] | None = None,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        max_tokens: int = DEFAULT_WORKER_MAX_TOKENS,
        temperature: float = 0.0,
        timeout: float | None = 120.0,
        max_ops: int | None = None,
        max_string_length: int | None = 160,
        safe_strings: bool = True,
        instruction: str | None = None,
        component: str = DEFAULT_COMPONENT,
        output_hint: bool = False,
    ) -> None:
        if name not in blueprint.workers:
            known = ", ".join(sorted(blueprint.workers)) or "none"
            raise WorkerConfigError(f"unknown worker {name!r} (workers: {known})")
        if decoding not in ("contract", "json", "none"):
            raise WorkerConfigError(f"worker {name!r}: unknown decoding {decoding!r}")
        self.blueprint = blueprint
        self._name = name
        self.contract = blueprint.workers[name]
        self.model: Model = resolve_model(model if model is not None else self.contract.spec.model)
        self.decoding: Decoding = decoding
        self.state = state
        self.tools: tuple[Tool, ...] = tuple(as_tool(t) for t in tools)
        names = [t.name for t in self.tools]
        if len(set(names)) != len(names):
            raise WorkerConfigError(f"worker {name!r}: duplicate tool names {names}")
        untrusted = [t.name for t in self.tools if t.untrusted]
        self.quarantine_path: str | None = quarantine_target(blueprint, name) if untrusted else None
        if untrusted and self.quarantine_path is None:
            raise WorkerConfigError(
                f"worker {name!r}: untrusted tool(s) {untrusted} need the blueprint's quarantine region and a"
                " write pattern inside it that appends (e.g. /quarantine/-), where their output goes"
            )
        self.max_tool_calls = max(0, max_tool_calls)
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.timeout = timeout
        if max_ops is None:
            # A 135M in-process model repeats its one good operation until max_tokens runs out.
            max_ops = 1 if self.model.name == "local" or self.model.name.startswith("local:") else DEFAULT_MAX_OPS
        self.max_ops = max_ops
        self.max_string_length = max_string_length
        self.safe_strings = safe_strings
        self._schema_refused = False
        self.instruction = instruction
        self.component = component
        self.spend: SpendHook | None = None
        """Set by a run with a spend cap; None (the default) costs the hot path nothing."""
        self.output: str | None = self.contract.spec.output
        """Where a typed reply goes (``WorkerSpec.output``); None: the reply is a patch."""
        self.output_schema: dict[str, Any] | None = (
            output_value_schema(blueprint, self.output) if self.output is not None else None
        )
        """The self-contained value schema at ``output`` (sent to the model, and stated in the prompt)."""
        self.output_hint = output_hint
        """True: a typed reply decoded against its schema is asked for with a one-line hint, not
        the schema stated in full (for providers known to honour the schema; ``constrains``)."""

    @property
    def name(self) -> str:
        """The blueprint worker this proposes for."""
        return self._name

    # -- building blocks (public so they can be inspected and tested) -------------------------
    def messages(
        self, view: View, event: JSON = None, *, feedback: Feedback = None, constrained: bool | None = None
    ) -> list[Message]:
        """The prompt of one invocation (see slateboard.workers.prompt). ``constrained``
        (default: whether this worker's decoding for ``view`` is the contract schema) chooses
        the one-line shape hint over the full patch rules."""
        system, user = self._blocks(view, event, feedback, constrained)
        return [Message.system(join_blocks(system)), Message.user(join_blocks(user))]

    def _blocks(
        self,
        view: View,
        event: JSON,
        feedback: Feedback,
        constrained: bool | None,
        payload: tuple[str, int] | None = None,
    ) -> tuple[list[PromptBlock], list[PromptBlock]]:
        if constrained is None:
            constrained = self.constrains(self.patch_schema(view)[1])
        output = (
            (self.output, self.output_schema) if self.output is not None and self.output_schema is not None else None
        )
        return prompt_blocks(
            self.blueprint,
            self._name,
            view,
            event,
            feedback=feedback,
            tools=self.tools,
            instruction=self.instruction,
            constrained=constrained,
            payload=payload,
            output=output,
        )

    def constrains(self, used: str) -> bool:
        """True when decoding ``used`` (a ``patch_schema`` result) enforces the contract: the
        patch shape, the writable paths and their value schemas (``contract`` and its narrowed
        forms), or, with ``output_hint``, a typed reply's value schema (``output`` and its
        narrowed forms); and the provider has not refused schemas."""
        enforced = used.startswith("contract") or (self.output_hint and used.startswith("output"))
        return enforced and not self._schema_refused

    def patch_schema(self, view: View) -> tuple[dict[str, Any] | None, str]:
        """The wrapped patch schema to send and the decoding actually used (``contract`` falls
        back to ``json`` when the worker can do nothing in the current state)."""
        if self.decoding == "none":
            return None, "none"
        if self.output_schema is not None:
            return dict(self.output_schema), "output"
        if self.decoding == "contract":
            # The live state, as this worker may read it: a quarantined region its contract does
            # not name must not reach its reply schema either (existing keys, indexes).
            state = (
                readable_state(self.blueprint, self._name, self.state())
                if self.state is not None
                else self._sketch(view)
            )
            derived = proposal_schema(
                self.blueprint,
                self._name,
                state,
                max_ops=self.max_ops,
                handles=[h.handle for h in view.handles],
                string_max_length=self.max_string_length,
                json_safe_strings=self.safe_strings,
            )
            if derived is not None:
                return derived.schema, "contract"
        return generic_patch_schema(sorted(self.contract.ops), max_ops=self.max_ops), "json"

    def reply_schema(self, view: View, *, allow_tools: bool) -> tuple[dict[str, Any] | None, str]:
        """The ``json_schema`` for one model call: the patch schema, or (while tool calls are
        left) either it or a tool call ``{"tool": name, "args": {...}}``."""
        schema, used = self.patch_schema(view)
        if schema is None or not allow_tools or not self.tools:
            return schema, used
        defs = schema.pop("$defs", None)
        calls = [
            {
                "type": "object",
                "properties": {
                    "tool": {"const": t.name},
                    "args": dict(t.parameters) if t.parameters else {"type": "object"},
                },
                "required": ["tool", "args"],
                "additionalProperties": False,
            }
            for t in self.tools
        ]
        combined: dict[str, Any] = {"anyOf": [schema, *calls]}
        if defs:
            combined["$defs"] = defs
        return combined, used

    def _sketch(self, view: View) -> JSON:
        known = [h.path for h in view.handles if h.path is not None]
        for h in view.handles:
            if h.is_range and h.id.startswith("[") and h.id.endswith("]"):
                try:
                    a, b = (int(x) for x in h.id[1:-1].split(":"))
                except ValueError:
                    continue
                if b > a:
                    known.append(f"{h.pointer}/{b - 1}")
        return sketch_state(self.blueprint, self._name, view.data, known)

    # -- the invocation ------------------------------------------------------------------------
    async def propose(self, view: View, event: JSON = None, *, feedback: Feedback = None) -> WorkerReply:
        """Prompt the model, run requested tools (bounded), and return its patch (see class)."""
        started = time.perf_counter()
        first: tuple[dict[str, Any] | None, str] | None = self.reply_schema(
            view, allow_tools=bool(self.tools) and self.max_tool_calls > 0
        )
        constrained = self.constrains(first[1]) if first is not None else False
        # The board text is built once: the prompt shows it and the accounting counts its values.
        payload = view_payload(
            view, constrained=constrained or self.output is not None, first=self.contract.spec.pinned
        )
        system, user = self._blocks(view, event, feedback, constrained, payload)
        messages = [Message.system(join_blocks(system)), Message.user(join_blocks(user))]
        usages: list[Usage] = []
        calls: list[JSON] = []
        tool_log: list[JSON] = []
        quarantined: list[str] = []  # outputs of untrusted tools, appended to the patch
        diagnostics: dict[str, JSON] = {"kind": self.kind, "model": self.model.name}
        # What the prompt is made of, in characters per block kind (for the token report:
        # schema/format/view framing are overhead, the view's values and the role are content).
        diagnostics["prompt_chars"] = dict(prompt_accounting(system, user, payload[1]))
        parts = prompt_parts(system, user)
        # The blocks and the board text are not kept across the model call: the messages hold
        # the prompt, and with many boards waiting on their models what each holds is memory.
        del system, user, payload
        raw = ""
        parsed: ParsedReply | None = None
        finish: str | None = None
        used: str = self.decoding
        try:
            while True:
                allow_tools = bool(self.tools) and len(calls) < self.max_tool_calls
                if first is not None and allow_tools == (bool(self.tools) and self.max_tool_calls > 0):
                    schema, used = first
                else:
                    schema, used = self.reply_schema(view, allow_tools=allow_tools)
                first = None
                if self._schema_refused:
                    schema, used = None, "none"
                try:
                    gen = await self._generate(messages, schema, diagnostics)
                except ModelSchemaRefused as exc:
                    if schema is None:
                        raise
                    # The provider refused the schema itself (e.g. a strict structured-output mode
                    # that cannot express it): ask without one from now on, and say so.
                    logger.warning(
                        "worker %s: %s refused the reply schema (%s); continuing without",
                        self._name,
                        self.model.name,
                        exc,
                    )
                    self._schema_refused = True
                    diagnostics["schema_refused"] = str(exc)
                    schema, used = None, "none"
                    if constrained:
                        # Nothing enforces the format now: the prompt must carry the full rules.
                        constrained = False
                        system, user = self._blocks(view, event, feedback, False)
                        messages = [Message.system(join_blocks(system)), Message.user(join_blocks(user)), *messages[2:]]
                        parts = prompt_parts(system, user)
                        del system, user
                    gen = await self._generate(messages, None, diagnostics)
                usages.append(generation_usage(gen, ""))
                raw, finish = gen.text, gen.finish_reason
                parsed = parse_reply(raw)
                if parsed.tool is None or not allow_tools:
                    break
                result = await self._run_tool(parsed.tool.name, parsed.tool.args, allow_tools)
                calls.append({"tool": parsed.tool.name, "ok": result.ok})
                told = result.message()
                entry: dict[str, JSON] = {"tool": parsed.tool.name, "args": jsonable(parsed.tool.args)}
                if self._untrusted(parsed.tool.name) and self.quarantine_path is not None:
                    # issue 29: an untrusted tool's output never reaches the model (nor the
                    # record's meta): it goes to the quarantine region with the patch
                    quarantined.append(result.output())
                    told = (
                        f"Tool {parsed.tool.name!r} is untrusted: its output ({len(quarantined[-1])} characters) was"
                        f" put in quarantine at {self.quarantine_path}, where a sanitiser decides what reaches the"
                        " board; you will not see it."
                    )
                    entry["quarantined"] = self.quarantine_path
                # issue 17: each call's arguments and the exact text the model got back go into the
                # record's meta, so the log holds every tool input (replay never calls a tool)
                entry["result"] = told
                tool_log.append(entry)
                messages = [*messages, Message.assistant(raw), Message.user(self._tool_message(told, len(calls)))]
        except ModelError as exc:
            if tool_log:
                diagnostics["tool_log"] = tool_log
            return self._failed(exc, raw, usages, calls, diagnostics, started)
        except TimeoutError as exc:  # a provider that let a bare timeout escape
            if tool_log:
                diagnostics["tool_log"] = tool_log
            return self._failed(exc, raw, usages, calls, diagnostics, started)
        assert parsed is not None
        diagnostics.update({"decoding": used, "parse": parsed.how, "finish_reason": finish})
        take = getattr(self.model, "take_fallbacks", None)
        fallbacks = take() if callable(take) else None
        if fallbacks:
            diagnostics["output_mode_fallback"] = jsonable(fallbacks)
        diagnostics["prompt_parts"] = self._parts(parts, usages)
        if calls:
            diagnostics["tool_calls"] = calls
            diagnostics["tool_log"] = tool_log
        if parsed.tool is not None:
            diagnostics["error"] = "the model asked for a tool call instead of proposing a patch"
        # Not ok: the raw reply, or the JSON text that repeats a key (the kernel rejects both).
        patch = parsed.patch if parsed.ok or isinstance(parsed.patch, str) else raw
        if self.output is not None and parsed.tool is None:
            # A typed reply is the value itself; what does not fit (or is not JSON: then the
            # text) is the kernel's to reject at stage schema, with the reason as feedback.
            # A reply over a bound stays raw text: the kernel rejects it at stage parse.
            fault = reply_fault(raw)
            patch = raw if fault is not None else [{"op": "add", "path": self.output, "value": parse_value(raw)}]
            diagnostics["parse"] = "raw" if fault is not None else "output"
        if quarantined and self.quarantine_path is not None:
            if parsed.ok and isinstance(patch, list):
                patch = [*patch, *({"op": "add", "path": self.quarantine_path, "value": q} for q in quarantined)]
            else:  # nothing to carry it: the kernel rejects the reply, the output is not kept
                diagnostics["quarantine_dropped"] = len(quarantined)
        return WorkerReply(
            patch=patch,
            usage=sum_usage(usages, self.component, time.perf_counter() - started),
            expand=parsed.expand,
            diagnostics=diagnostics,
            raw=raw,
        )

    @staticmethod
    def _parts(chars: dict[str, int], usages: Sequence[Usage]) -> JSON:
        """The prompt split into view / format / instruction (issue 18): characters per part
        (``prompt_parts``: they add up to the prompt's), and the first call's prompt tokens shared
        out over them in that proportion (they add up to the model's count; later tool-call turns
        are not split)."""
        tokens = usages[0].tokens_in if usages else 0
        return {"chars": dict(chars), "tokens": dict(split_tokens(tokens, chars)), "prompt_tokens": tokens}

    def _generate(
        self, messages: list[Message], schema: dict[str, Any] | None, diagnostics: dict[str, JSON]
    ) -> Awaitable[Generation]:
        """The model call, under the spend hook when there is one. Without one (and without
        tracing) what is awaited is the model's own call: no coroutine of this worker waits on it
        (each would live, garbage-collector tracked, for the length of the call)."""
        if self.spend is None:
            return self._call(messages, schema)
        return self._guarded(messages, schema, diagnostics)

    async def _guarded(
        self, messages: list[Message], schema: dict[str, Any] | None, diagnostics: dict[str, JSON]
    ) -> Generation:
        assert self.spend is not None
        gen, settled = await guarded_call(
            self.spend, self.model.name, messages, self.max_tokens, functools.partial(self._call, messages, schema)
        )
        if settled is not None:
            diagnostics["spend_settled"] = settled
        return gen

    def _call(self, messages: list[Message], schema: dict[str, Any] | None) -> Awaitable[Generation]:
        if telemetry.enabled():
            return self._traced_call(messages, schema)
        # No span to report on: the model's call (its tokens streamed when wanted) is awaited as it is.
        return self._model_call(messages, schema)

    def _model_call(self, messages: list[Message], schema: dict[str, Any] | None) -> Awaitable[Generation]:
        """The model's own generate, its tokens streamed when wanted (``models.streamed``)."""
        return streamed.generate(
            self.model,
            messages,
            json_schema=schema,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            timeout=self.timeout,
        )

    async def _traced_call(self, messages: list[Message], schema: dict[str, Any] | None) -> Generation:
        # telemetry hook (issue 17): a GenAI "chat {model}" span per model call
        with telemetry.model_span(self.model.name, max_tokens=self.max_tokens, temperature=self.temperature) as sp:
            gen = await self._model_call(messages, schema)
            telemetry.record_generation(sp, gen)
            return gen

    async def _run_tool(self, name: str, args: dict[str, JSON], allowed: bool) -> ToolResult:
        if not allowed:
            return ToolResult(name, False, error=f"no tool calls left (limit {self.max_tool_calls})")
        found = next((t for t in self.tools if t.name == name), None)
        if found is None:
            known = ", ".join(t.name for t in self.tools)
            return ToolResult(name, False, error=f"unknown tool {name!r} (tools: {known})")
        # telemetry hook (issue 17): a GenAI "execute_tool {name}" span per tool call
        with telemetry.span(
            f"execute_tool {name}", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
        ) as sp:
            result = await found.call(args)
            telemetry.set_attributes(sp, {"slateboard.tool.ok": result.ok})
        if not result.ok:
            logger.info("worker %s: tool %s failed: %s", self._name, name, result.error)
        return result

    def _untrusted(self, name: str) -> bool:
        return any(t.name == name and t.untrusted for t in self.tools)

    def _tool_message(self, told: str, used: int) -> str:
        left = self.max_tool_calls - used
        tail = (
            f"You may call {left} more tool(s), or reply with the {'value' if self.output else 'patch'}."
            if left > 0
            else (
                "No more tool calls: reply now with the JSON value."
                if self.output
                else 'No more tool calls: reply now with {"patch": [...]}.'
            )
        )
        return f"{told}\n{tail}"

    def _failed(
        self,
        exc: BaseException,
        raw: str,
        usages: list[Usage],
        calls: list[JSON],
        diagnostics: dict[str, JSON],
        started: float,
    ) -> WorkerReply:
        # redacted: the error is stored in the record and re-sent as the next prompt's feedback
        error = redact(str(exc)) or type(exc).__name__
        # A call the spend cap refused was never made: the run's end says so once (budget:<ledger>).
        level = logging.INFO if isinstance(exc, SpendRefused) else logging.WARNING
        logger.log(level, "worker %s: model %s failed: %s", self._name, self.model.name, error)
        diagnostics.update({"error": error, "error_type": type(exc).__name__, "model_error": error})
        if calls:
            diagnostics["tool_calls"] = calls
        return WorkerReply(
            patch=raw,
            usage=sum_usage(usages, self.component, time.perf_counter() - started),
            diagnostics=diagnostics,
            raw=raw,
        )
