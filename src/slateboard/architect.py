"""The Architect: a request in words -> an accepted Blueprint, with one model call plus repairs.

The model is shown the blueprint meta-schema (``Blueprint.model_json_schema()``, compacted), a
small example and the conventions (pointer patterns, CEL variables), and asked for one JSON
blueprint. The reply is read tolerantly (code fences, prose around the object) and accepted with
``compile_blueprint``. When it is rejected, the validator's issues (each a JSON path inside the
blueprint and a message) are sent back with the previous attempt, for at most ``max_repairs``
repairs. The Architect never touches a board: it only returns a CompiledBlueprint.

Guarantees:

* ``design`` returns a blueprint that ``compile_blueprint`` accepted and, with
  ``require_runnable`` (default), that has a ``start`` rule, a ``done`` condition and an
  ``answer`` pointer some worker may write;
* it makes at most ``1 + max_repairs`` model calls; a model failure is not retried here (the
  model's own retry policy applies) and raises ArchitectError;
* when no attempt is accepted it raises ArchitectError whose ``issues`` are every issue of the
  last attempt and whose ``attempts`` keep each attempt's text and issues;
* token usage of every call is reported with component ``"architect"`` (``Design.usage``, and
  summed over the Architect's life in ``Architect.usage``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import jsonschema_rs

from .architect_outline import OUTLINE_SCHEMA, OUTLINE_SYSTEM, blueprint_from_outline
from .blueprint.compile import BlueprintError, BlueprintIssue, CompiledBlueprint, compile_blueprint
from .blueprint.models import Blueprint
from .errors import InvalidInput, RunError
from .kernel.record import Usage
from .models import Message, Model, ModelError, resolve_model
from .scheduling.coordinator import parse_json_object
from .workers.parse import reply_fault

__all__ = [
    "COMPONENT",
    "EXAMPLE_BLUEPRINT",
    "Architect",
    "ArchitectAttempt",
    "ArchitectError",
    "ArchitectMode",
    "Design",
    "blueprint_from_request",
    "meta_schema_text",
    "runnable_issues",
]

COMPONENT = "architect"
"""The usage component of Architect model calls."""

ArchitectMode = Literal["full", "outline", "auto"]
"""``full``: the model writes the whole blueprint. ``outline``: it fills a small plan that
slateboard turns into a blueprint (``slateboard.architect_outline``). ``auto``: outline for a
model run in process (a small context), full for the others."""

OUTLINE_MAX_TOKENS = 512
"""The reply budget of an outline: the plan is at most ~300 tokens."""

EXAMPLE_BLUEPRINT: dict[str, Any] = {
    "name": "summary",
    "description": "Summarise a text: a reader lists key points, a writer writes the summary.",
    "schema": {
        "type": "object",
        "required": ["text", "points"],
        "additionalProperties": False,
        "properties": {
            "text": {"type": "string"},
            "points": {"type": "array", "maxItems": 8, "items": {"type": "string", "minLength": 1}},
            "summary": {"type": "string", "minLength": 1, "maxLength": 1000},
        },
    },
    "initial_state": {"text": "", "points": []},
    "workers": {
        "reader": {"instruction": "Add the key points of the text.", "reads": ["/text"], "writes": ["/points/-"]},
        "writer": {"instruction": "Write the summary from the points.", "reads": ["/points"], "writes": ["/summary"]},
    },
    "rules": [
        {"on": {"op": "start"}, "invoke": "reader"},
        {"on": {"op": "add", "path": "/points/-"}, "when": "size(state.points) >= 3", "invoke": "writer"},
    ],
    "invariants": [{"at": "/points", "rule": "size(self) <= 8", "message": "at most 8 points"}],
    "done": "has(state.summary)",
    "answer": "/summary",
}
"""The small example shown to the model (it compiles; a test keeps it that way)."""

_CONVENTIONS = """\
Conventions:
- The state is JSON described by "schema" (JSON Schema 2020-12); "initial_state" must satisfy it.
- Contracts are JSON Pointer patterns: "*" matches one segment, "-" is an array append
  (e.g. "/claims/-" adds a claim, "/claims/*/status" sets any claim's status), "/**" a whole subtree.
  Every write pattern must reach a location of the schema. "reads" and "writes" are separate.
- Workers may use the ops add, replace and test by default; remove, move, copy only when listed in "ops".
- Rules: {"on": {"op": "start"}} fires once when the board is created (at least one rule must);
  {"on": {"op": "add", "path": "/claims/-"}} fires on committed changes; "when" is CEL over
  event, value (the new value), bindings and state.
- Invariants are CEL at a schema location "at" with self (the node), oldSelf (its previous value)
  and root (the whole state). "done" is CEL over state. "answer" is the pointer of the final answer.
- CEL examples: has(state.summary), size(self) <= 8, self.all(x, x.id != ''), root.items.exists(i, i.id == self.ref)."""

_SYSTEM = """\
You are the Architect of a blackboard system. Turn the user's task into ONE blueprint: the JSON
state schema, the workers with their read/write contracts, the rules that schedule them, the
invariants, a done condition and an answer pointer. Reply with the blueprint as a single JSON
object and nothing else.

Blueprint meta-schema (JSON Schema):
{meta}

{conventions}

Example blueprint:
{example}"""


def _strip_titles(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_titles(v) for k, v in value.items() if k != "title"}
    if isinstance(value, list):
        return [_strip_titles(v) for v in value]
    return value


def meta_schema_text() -> str:
    """The blueprint meta-schema as compact JSON (titles dropped)."""
    return json.dumps(_strip_titles(Blueprint.model_json_schema()), separators=(",", ":"), sort_keys=True)


def runnable_issues(compiled: CompiledBlueprint) -> list[BlueprintIssue]:
    """What an accepted blueprint lacks to run on its own: a ``start`` rule, a ``done``
    condition, an ``answer`` pointer that some worker's write contract covers."""
    from .kernel.pointer import PointerError, parse_pointer

    spec = compiled.spec
    issues: list[BlueprintIssue] = []
    if not any(r.on.op == "start" for r in spec.rules):
        issues.append(BlueprintIssue("/rules", 'no rule starts the board: add one with "on": {"op": "start"}'))
    if spec.done is None:
        issues.append(BlueprintIssue("/done", "missing: a CEL condition over state that says when the task is done"))
    if spec.answer is None:
        issues.append(BlueprintIssue("/answer", "missing: the JSON Pointer of the final answer in the state"))
    else:
        try:
            tokens = parse_pointer(spec.answer)
        except PointerError as exc:
            tokens = None
            issues.append(BlueprintIssue("/answer", str(exc)))
        if tokens is not None and not any(c.may_write(tokens) for c in compiled.workers.values()):
            issues.append(BlueprintIssue("/answer", f"no worker's write contract covers the answer {spec.answer!r}"))
    return issues


def _unread(text: str, what: str) -> BlueprintIssue:
    """The issue of a reply that holds no JSON object: over a bound (named), or none found."""
    fault = reply_fault(text)
    if fault is not None:
        return BlueprintIssue("", f"the reply was not read: {fault}; answer with {what} as one JSON object")
    return BlueprintIssue("", f"the reply holds no JSON object: answer with {what} as JSON")


@dataclass(frozen=True, slots=True)
class ArchitectAttempt:
    """One model call: the reply text, the issues found in it (empty when accepted), its usage."""

    text: str
    issues: tuple[BlueprintIssue, ...]
    usage: Usage

    @property
    def accepted(self) -> bool:
        """True when this attempt's blueprint was accepted."""
        return not self.issues


class ArchitectError(RunError, RuntimeError):
    """No accepted blueprint after the repairs (or the model failed). ``issues`` are every issue
    of the last attempt; ``attempts`` every attempt; ``usage`` the tokens spent."""

    def __init__(self, message: str, issues: Sequence[BlueprintIssue], attempts: Sequence[ArchitectAttempt]) -> None:
        lines = "\n".join(f"  - {i}" for i in issues)
        super().__init__(f"{message}\n{lines}" if lines else message)
        self.issues: list[BlueprintIssue] = list(issues)
        self.attempts: list[ArchitectAttempt] = list(attempts)
        self.usage = _sum(a.usage for a in attempts)


@dataclass(frozen=True)
class Design:
    """An accepted blueprint with the attempts that led to it and their usage (``architect``)."""

    blueprint: CompiledBlueprint
    attempts: tuple[ArchitectAttempt, ...] = ()
    usage: Usage = field(default_factory=lambda: Usage(component=COMPONENT))

    @property
    def repairs(self) -> int:
        """How many repair rounds were needed (0: accepted at once)."""
        return max(0, len(self.attempts) - 1)


def _sum(parts: Any) -> Usage:
    tin = tout = read = written = 0
    lat = 0.0
    for u in parts:
        tin += u.tokens_in
        tout += u.tokens_out
        lat += u.latency_ms
        read += u.cache_read
        written += u.cache_write
    return Usage(tin, tout, round(lat, 3), COMPONENT, read, written)


class Architect:
    """Designs blueprints from requests with a model (see module docstring).

    ``model``: a Model or model string (default ``"local"``). ``max_repairs``: repair rounds
    after the first attempt. ``example``: the example blueprint shown (default
    EXAMPLE_BLUEPRINT). ``json_schema``: optionally sent to constrain decoding (providers that
    support it). ``require_runnable``: also demand a start rule, done and answer. ``mode``: see
    ``ArchitectMode`` (``auto`` decides from the model when designing).
    """

    def __init__(
        self,
        model: Model | str | None = None,
        *,
        max_repairs: int = 2,
        example: Mapping[str, Any] | None = None,
        require_runnable: bool = True,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int = 4096,
        temperature: float = 0.0,
        timeout: float | None = 300.0,
        mode: ArchitectMode = "full",
    ) -> None:
        if max_repairs < 0:
            raise InvalidInput("max_repairs must be >= 0")
        if mode not in ("full", "outline", "auto"):
            raise InvalidInput(f"mode must be 'full', 'outline' or 'auto', got {mode!r}")
        self.model: Model = resolve_model(model)
        self.max_repairs = max_repairs
        self.example = dict(example) if example is not None else EXAMPLE_BLUEPRINT
        self.require_runnable = require_runnable
        self.json_schema = json_schema
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.timeout = timeout
        self.mode: Literal["full", "outline"] = (
            ("outline" if isinstance(getattr(self.model, "n_ctx", None), int) else "full") if mode == "auto" else mode
        )
        self.usage = Usage(component=COMPONENT)
        self.calls = 0

    # -- prompts ------------------------------------------------------------------------------
    def system_prompt(self) -> str:
        """The system message: role, meta-schema, conventions, example."""
        example = json.dumps(self.example, separators=(",", ":"), ensure_ascii=False)
        return _SYSTEM.format(meta=meta_schema_text(), conventions=_CONVENTIONS, example=example)

    def messages(self, request: str) -> list[Message]:
        """The first prompt for ``request`` (the outline prompt in outline mode)."""
        system = OUTLINE_SYSTEM if self.mode == "outline" else self.system_prompt()
        return [Message.system(system), Message.user(f"Task:\n{request.strip()}")]

    @staticmethod
    def repair_prompt(issues: Sequence[BlueprintIssue]) -> str:
        """The message sent after a rejected attempt: every issue by path, and what to do."""
        lines = "\n".join(f"- {i.path or '/'}: {i.message}" for i in issues)
        return (
            f"The blueprint was rejected ({len(issues)} issue{'s' if len(issues) != 1 else ''}; "
            "paths are JSON Pointers into your blueprint):\n"
            f"{lines}\n"
            "Fix every issue and reply with the complete corrected blueprint as one JSON object."
        )

    # -- checking -----------------------------------------------------------------------------
    def check(self, text: str) -> tuple[CompiledBlueprint | None, list[BlueprintIssue]]:
        """Read and accept one reply: the compiled blueprint, or None and every issue."""
        data = parse_json_object(text, keys=("workers", "schema"))
        if data is None:
            return None, [_unread(text, "the blueprint")]
        try:
            compiled = compile_blueprint(data)
        except BlueprintError as exc:
            return None, list(exc.issues)
        except Exception as exc:  # the validator must never take the architect down
            return None, [BlueprintIssue("", f"could not be checked: {type(exc).__name__}: {exc}")]
        if self.require_runnable:
            extra = runnable_issues(compiled)
            if extra:
                return None, extra
        return compiled, []

    def check_outline(self, text: str, request: str) -> tuple[CompiledBlueprint | None, list[BlueprintIssue]]:
        """Outline mode's ``check``: the reply must satisfy ``OUTLINE_SCHEMA``; the blueprint
        built from it is then checked as a full reply would be."""
        data = parse_json_object(text, keys=("steps",))
        if data is None:
            return None, [_unread(text, "the plan")]
        errors = [
            BlueprintIssue("/" + "/".join(str(p) for p in e.instance_path), e.message)
            for e in _OUTLINE_VALIDATOR.iter_errors(data)
        ]
        if errors:
            return None, errors[:20]
        return self.check(json.dumps(blueprint_from_outline(data, request)))

    # -- designing ----------------------------------------------------------------------------
    async def design_report(self, request: str) -> Design:
        """Design a blueprint for ``request`` and report the attempts (see module docstring)."""
        if not isinstance(request, str) or not request.strip():
            raise InvalidInput("the request must be a non-empty string")
        outline = self.mode == "outline"
        base = self.messages(request)
        messages = list(base)
        attempts: list[ArchitectAttempt] = []
        for _round in range(1 + self.max_repairs):
            started = time.perf_counter()
            try:
                gen = await self.model.generate(
                    messages,
                    json_schema=OUTLINE_SCHEMA if outline else self.json_schema,
                    max_tokens=min(self.max_tokens, OUTLINE_MAX_TOKENS) if outline else self.max_tokens,
                    temperature=self.temperature,
                    timeout=self.timeout,
                )
            except (ModelError, TimeoutError) as exc:
                last = list(attempts[-1].issues) if attempts else []
                raise ArchitectError(
                    f"the architect's model failed: {type(exc).__name__}: {exc}", last, attempts
                ) from exc
            usage = Usage(
                gen.usage.prompt_tokens,
                gen.usage.completion_tokens,
                round((time.perf_counter() - started) * 1000.0, 3),
                COMPONENT,
                gen.usage.cache_read,
                gen.usage.cache_write,
            )
            self._count(usage)
            compiled, issues = self.check_outline(gen.text, request) if outline else self.check(gen.text)
            attempts.append(ArchitectAttempt(gen.text, tuple(issues), usage))
            if compiled is not None:
                return Design(compiled, tuple(attempts), _sum(a.usage for a in attempts))
            messages = [*base, Message.assistant(gen.text), Message.user(self.repair_prompt(issues))]
        raise ArchitectError(
            f"no acceptable blueprint after {len(attempts)} attempt{'s' if len(attempts) != 1 else ''} "
            f"({self.max_repairs} repair{'s' if self.max_repairs != 1 else ''}); issues of the last attempt:",
            attempts[-1].issues,
            attempts,
        )

    async def design(self, request: str) -> CompiledBlueprint:
        """An accepted blueprint for ``request``; ArchitectError when none could be had."""
        return (await self.design_report(request)).blueprint

    def _count(self, usage: Usage) -> None:
        self.calls += 1
        self.usage = Usage(
            self.usage.tokens_in + usage.tokens_in,
            self.usage.tokens_out + usage.tokens_out,
            round(self.usage.latency_ms + usage.latency_ms, 3),
            COMPONENT,
            self.usage.cache_read + usage.cache_read,
            self.usage.cache_write + usage.cache_write,
        )


async def blueprint_from_request(
    request: str,
    *,
    model: Model | str | None = None,
    max_repairs: int = 2,
    require_runnable: bool = True,
    mode: ArchitectMode = "auto",
) -> CompiledBlueprint:
    """``Architect(model, max_repairs=..., mode=...).design(request)`` in one call; ``auto``
    (the default here) plans an outline on an in-process model, a full blueprint elsewhere."""
    architect = Architect(model, max_repairs=max_repairs, require_runnable=require_runnable, mode=mode)
    return await architect.design(request)


_OUTLINE_VALIDATOR = jsonschema_rs.validator_for(OUTLINE_SCHEMA)
