"""Accepting a blueprint: every check the models cannot do, with every error listed by path.

``compile_blueprint`` turns a Blueprint (or its JSON/YAML form) into a CompiledBlueprint: the
state schema compiled per location, contract patterns parsed and matched against schema
locations, and every CEL expression compiled. A blueprint that fails any check raises
BlueprintError whose ``issues`` name each problem by JSON path inside the blueprint.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel as PydanticModel
from pydantic import ValidationError

from ..errors import InvalidInput, UsageError
from ..kernel.canonical import JSON, hash_json
from ..kernel.cel import DEFAULT_CEL_BUDGET, MAX_COMPREHENSION_NESTING, CelExpr
from ..kernel.contract import WorkerContract
from ..kernel.guardstage import GuardTerms
from ..kernel.invariants import CompiledInvariant, PythonInvariant, check_all_invariants
from ..kernel.jsonvalue import JsonLimits, JsonValueError, check_json_value
from ..kernel.pointer import Pattern, PointerError, escape_token
from ..kernel.schema import SchemaError, SchemaIndex, pattern_locations
from ._celvars import INVARIANT_VARIABLES, RULE_VARIABLES, STATE_VARIABLES, compile_in_context
from ._guards import guard_issues, guard_terms
from ._members import cel_reference_issues, path_issue
from ._model_strings import bad_model_string
from ._outputs import output_issues
from ._salvage import Salvaged, prune_schema, salvage
from ._subboards import InlineError, board_issues, inline_boards
from ._visibility import Visibility, visibility_issues
from .gather import CompiledBatch, CompiledJoin, compile_gather, unquoted_on
from .loading import MAX_INITIAL_STATE_BYTES, BlueprintTextError, parse_blueprint_text, rules_on
from .models import Blueprint, InvariantSpec, RetentionSpec, RuleSpec, StageSpec, WorkerSpec
from .state_schema import StateNotExpressible, closed_state_schema

_META_REFUSAL = "state schema is not valid JSON Schema"
NO_LOCATION = "no location of the state schema"
REFERS_TO = "x-refers-to"
# Keywords whose values are instance data, not subschemas: an ``x-refers-to`` inside them is data.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


@dataclass(frozen=True, slots=True)
class BlueprintIssue:
    """One reason a blueprint was rejected: where (a JSON Pointer into it) and what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '/'}: {self.message}"


class BlueprintError(UsageError, ValueError):
    """A rejected blueprint, with every issue found (not just the first)."""

    def __init__(self, issues: list[BlueprintIssue], source: str | None = None) -> None:
        head = f"blueprint {source} rejected" if source else "blueprint rejected"
        lines = "\n".join(f"  - {issue}" for issue in issues)
        super().__init__(f"{head} ({len(issues)} issue{'s' if len(issues) != 1 else ''}):\n{lines}")
        self.issues = issues
        self.source = source


class StateModelMissing(InvalidInput):
    """``typed_state`` on a blueprint compiled without ``schema=<a pydantic model class>``."""


@dataclass(frozen=True, slots=True)
class CompiledRule:
    """A rule with its trigger pattern and condition compiled (and its join or batch, if any)."""

    index: int
    name: str
    spec: RuleSpec
    pattern: Pattern
    when: CelExpr | None
    gather: CompiledJoin | CompiledBatch | None = None


RETENTION_FUNCTION = "slateboard.workers.retention:prune"
"""The function reference of the system workers a blueprint's ``retention`` bounds create (the
worker factory builds them as ``workers.retention.RetentionWorker``)."""
RETENTION_PRIORITY = 1000
"""Priority of their invocations: pruning runs before other queued work."""


@dataclass(frozen=True, slots=True)
class CompiledRetention:
    """A retention bound: the system ``worker`` keeps the last ``keep_last`` items of the array
    at ``path`` (its tokens in ``tokens``)."""

    worker: str
    path: str
    tokens: tuple[str, ...]
    keep_last: int


@dataclass(frozen=True, slots=True)
class CompiledStage:
    """A stage with compiled entry/exit conditions."""

    name: str
    enter: CelExpr | None
    exit: CelExpr | None


@dataclass
class CompiledBlueprint:
    """An accepted blueprint: everything the kernel, scheduler and view builder need."""

    spec: Blueprint
    schema: SchemaIndex
    workers: dict[str, WorkerContract]
    rules: list[CompiledRule]
    invariants: list[CompiledInvariant]
    stages: list[CompiledStage]
    done: CelExpr | None
    approval: tuple[Pattern, ...]
    quarantine: Pattern | None
    digest: str
    extra_invariants: list[CompiledInvariant] = field(default_factory=list)
    state_model: type[PydanticModel] | None = None
    fail: CelExpr | None = None
    """The blueprint's ``fail`` condition (compiled at acceptance like ``done``)."""
    retention: dict[str, CompiledRetention] = field(default_factory=dict)
    """The blueprint's retention bounds, by the name of the system worker that applies each
    (that worker and the rule that wakes it are in ``workers`` and ``rules`` too)."""
    visibility: Visibility | None = None  # its visibility on entries (slateboard.kernel.visibility)
    guard_terms: tuple[GuardTerms, ...] = ()
    """What the kernel reads of the blueprint's ``guards`` (``kernel.guardstage``), in order."""

    def typed_state(self, state: Any) -> Any:
        """``state`` (e.g. ``RunResult.state``) as an instance of the pydantic model the blueprint
        was compiled with (``compile_blueprint(..., schema=Model)``); raises ValueError when the
        blueprint has none (StateModelMissing), pydantic's ValidationError when the state does
        not fit it."""
        if self.state_model is None:
            raise StateModelMissing("this blueprint was not compiled with schema=<a pydantic model class>")
        return self.state_model.model_validate(state)

    def typed_answer(self, state: Any) -> Any:
        """The blueprint's ``answer`` of ``state`` (e.g. ``RunResult.state``) as the state model
        types it: ``typed_state(state)`` walked along the answer pointer (a typed worker's
        ``output`` there gives an instance of its ``output_type``); None when the state has no
        answer yet. Raises like ``typed_state``, and ValueError when the blueprint names no
        ``answer``."""
        if self.spec.answer is None:
            raise InvalidInput("this blueprint names no 'answer' pointer")
        node: Any = self.typed_state(state)
        for token in Pattern.parse(self.spec.answer).tokens:
            if isinstance(node, PydanticModel):
                name = next((n for n, f in type(node).model_fields.items() if (f.alias or n) == token), token)
                node = getattr(node, name, None)
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            elif isinstance(node, dict):
                node = node.get(token)
            else:
                return None
        return node

    @property
    def all_invariants(self) -> list[CompiledInvariant]:
        """Blueprint invariants followed by Python-registered ones."""
        return self.invariants + self.extra_invariants

    def add_invariant(self, at: str, func: PythonInvariant, *, name: str | None = None) -> None:
        """Register a Python invariant at location pattern ``at``.

        ``func`` returns None when the node is acceptable, else the reason. It must be a pure
        function of its context, or replay will not reproduce decisions.
        """
        index = len(self.invariants) + len(self.extra_invariants)
        self.extra_invariants.append(
            CompiledInvariant(
                index,
                name or str(getattr(func, "__name__", f"python#{index}")),
                Pattern.parse(at),
                None,
                func=func,
            )
        )

    def initial_state(self) -> JSON:
        """A fresh deep copy of the blueprint's initial state."""
        return json.loads(json.dumps(self.spec.initial_state))


def load_blueprint(source: str | Path | dict[str, Any] | Blueprint) -> CompiledBlueprint:
    """Load and accept a blueprint from a file path (YAML/JSON), a dict, or a Blueprint."""
    label: str | None = None
    data: Any = source
    if isinstance(source, dict):
        data = rules_on(source)
    if isinstance(source, (str, Path)):
        path = Path(source)
        label = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise BlueprintError([BlueprintIssue("", f"not UTF-8 text (byte {exc.start})")], label) from None
        except OSError as exc:
            raise BlueprintError([BlueprintIssue("", f"cannot read file: {exc.strerror}")], label) from None
        try:
            data = rules_on(parse_blueprint_text(text, json_text=path.suffix == ".json"))
            data = inline_boards(data, path.resolve().parent, (str(path.resolve()),))
        except BlueprintTextError as exc:
            raise BlueprintError([BlueprintIssue("", str(exc))], label) from None
        except InlineError as exc:
            raise BlueprintError([BlueprintIssue(exc.where, exc.message)], label) from None
    unquoted_on(data)  # YAML 1.1 reads an unquoted `on:` key as true; a rule or a join part never means that
    return compile_blueprint(data, source_label=label)


def compile_blueprint(
    data: Blueprint | dict[str, Any],
    *,
    source_label: str | None = None,
    schema: type[PydanticModel] | None = None,
) -> CompiledBlueprint:
    """Accept a blueprint or raise BlueprintError listing every issue by JSON path.

    ``schema``, a pydantic model class, replaces the blueprint's state schema with the model's
    JSON schema (its objects closed unless a model says ``extra="allow"``: see
    ``blueprint.state_schema``); the compiled blueprint keeps the class, so that
    ``typed_state(result.state)`` gives typed access to the final state.
    """
    if schema is not None:
        if not (isinstance(schema, type) and issubclass(schema, PydanticModel)):
            raise TypeError(f"schema= takes a pydantic model class, got {schema!r}")
        try:
            json_schema = closed_state_schema(schema)
        except StateNotExpressible as exc:
            raise BlueprintError([BlueprintIssue("/schema", str(exc))], source_label) from None
        if isinstance(data, Blueprint):
            data = data.model_copy(update={"state_schema": json_schema})
        elif isinstance(data, dict):
            data = {**data, "schema": json_schema}
        compiled = _compile(data, source_label)
        compiled.state_model = schema
        return compiled
    return _compile(data, source_label)


def _compile(data: Blueprint | dict[str, Any], source_label: str | None) -> CompiledBlueprint:
    salvaged: Salvaged | None = None
    try:
        data = inline_boards(data)  # sub-board blueprints named by file or template, made inline
    except InlineError as exc:
        raise BlueprintError([BlueprintIssue(exc.where, exc.message)], source_label) from None
    if isinstance(data, Blueprint):
        bp = data
    else:
        if not isinstance(data, dict):
            raise BlueprintError(
                [BlueprintIssue("", f"a blueprint must be an object, got {type(data).__name__}")],
                source_label,
            )
        try:
            bp = Blueprint.model_validate(data)
        except ValidationError:
            # Report the shape errors together with what the later checks find in the parts
            # the shape errors leave intact (one report, not one phase per attempt).
            salvaged = salvage(data)
            shape = [BlueprintIssue(path, message) for path, message in salvaged.shape]
            if salvaged.blueprint is None:
                raise BlueprintError(shape, source_label) from None
            later = _check(salvaged.blueprint, salvaged)
            found = shape + [BlueprintIssue(salvaged.original(i.path), i.message) for i in later.issues]
            raise BlueprintError(found, source_label) from None
    result = _check(bp, None)
    if result.compiled is None or result.issues:
        raise BlueprintError(result.issues, source_label)
    return result.compiled


@dataclass
class _Checked:
    issues: list[BlueprintIssue]
    compiled: CompiledBlueprint | None = None


def _schema_index(bp: Blueprint, issues: list[BlueprintIssue]) -> tuple[SchemaIndex | None, SchemaIndex | None]:
    """(the state schema compiled, an index of its locations for the contract checks). When the
    schema is invalid the first is None, every invalid keyword is named, and the second is the
    schema without those keywords (None if even that does not compile)."""
    try:
        return SchemaIndex(bp.state_schema), None
    except SchemaError as exc:
        pruned, found = prune_schema(bp.state_schema)
        if not found or not str(exc).startswith(_META_REFUSAL):
            issues.append(BlueprintIssue("/schema", str(exc)))
        for where, message in found:
            at = f" at {where}" if where else ""
            issues.append(BlueprintIssue("/schema", f"{_META_REFUSAL}{at}: {message}"))
        if not found:
            return None, None
        try:
            return None, SchemaIndex(pruned)
        except SchemaError:
            return None, None


def _check(bp: Blueprint, salvaged: Salvaged | None) -> _Checked:
    """Every acceptance check on a shape-valid blueprint; the compiled blueprint when all pass.
    ``salvaged`` (the blueprint had shape errors and is what remains of it) keeps the checks off
    the parts that were removed."""
    issues: list[BlueprintIssue] = []
    schema_broken = salvaged is not None and salvaged.schema_broken
    workers_broken = salvaged is not None and salvaged.workers_broken

    schema: SchemaIndex | None = None
    locations: SchemaIndex | None = None
    if not schema_broken:
        schema, locations = _schema_index(bp, issues)
        # Keep going when the schema is invalid: the checks that do not need it still report.
        locations = schema or locations
    try:
        # Bounded (issue 29, R7): a huge initial state is a blueprint issue, not a store failure later.
        check_json_value(bp.initial_state, JsonLimits(max_bytes=MAX_INITIAL_STATE_BYTES, max_depth=bp.limits.max_depth))
    except JsonValueError as exc:
        issues.append(
            BlueprintIssue("/initial_state" + exc.path, exc.reason.replace("proposal is", "the initial state is"))
        )

    def pattern(text: str, where: str) -> Pattern | None:
        try:
            return Pattern.parse(text)
        except PointerError as exc:
            issues.append(BlueprintIssue(where, str(exc)))
            return None

    cel_budget = bp.limits.cel_budget or DEFAULT_CEL_BUDGET
    cel_nesting = bp.limits.cel_nesting or MAX_COMPREHENSION_NESTING

    def cel(text: str | None, where: str, names: frozenset[str] = STATE_VARIABLES) -> CelExpr | None:
        expr, issue = compile_in_context(text, names, budget=cel_budget, max_nesting=cel_nesting)
        if issue is not None:
            issues.append(BlueprintIssue(where, issue))
        return expr

    def unreached(tokens: tuple[str, ...]) -> str | None:
        # the members are walked in a valid schema only (an invalid one is reported as such)
        return None if locations is None else path_issue(locations, bp.state_schema if schema else None, tokens)

    quarantine = pattern(bp.quarantine, "/quarantine") if bp.quarantine is not None else None
    workers: dict[str, WorkerContract] = {}
    for name, spec in bp.workers.items():
        base = f"/workers/{escape_token(name)}"
        if spec.model is not None and spec.function is not None:
            issues.append(BlueprintIssue(base, "a worker has either a model or a function, not both"))
        if spec.model is not None and (bad := bad_model_string(spec.model)) is not None:
            issues.append(BlueprintIssue(f"{base}/model", bad))
        reads = [p for i, r in enumerate(spec.reads) if (p := pattern(r, f"{base}/reads/{i}"))]
        for i, r in enumerate(spec.reads):
            if (rp := _parsed(r)) is not None and (why := unreached(rp.tokens)) is not None:
                issues.append(BlueprintIssue(f"{base}/reads/{i}", f"read pattern {r!r} matches {NO_LOCATION}{why}"))
        writes: list[Pattern] = []
        for i, w in enumerate(spec.writes):
            p = pattern(w, f"{base}/writes/{i}")
            if p is None:
                continue
            if (why := unreached(p.tokens)) is not None:
                issues.append(BlueprintIssue(f"{base}/writes/{i}", f"write pattern {w!r} matches {NO_LOCATION}{why}"))
            if spec.untrusted and quarantine is not None and not _within(p, quarantine):
                issues.append(
                    BlueprintIssue(
                        f"{base}/writes/{i}",
                        f"untrusted worker may only write inside the quarantine region {quarantine.text!r}",
                    )
                )
            writes.append(p)
        if spec.untrusted and quarantine is None:
            issues.append(
                BlueprintIssue(f"{base}/untrusted", "an untrusted worker needs a blueprint 'quarantine' region")
            )
        if spec.output is not None:
            issues.extend(
                BlueprintIssue(*i) for i in output_issues(spec.output, spec, writes, locations, f"{base}/output")
            )
        if spec.board is not None:
            issues.extend(BlueprintIssue(*i) for i in board_issues(name, spec, reads, locations, bp.limits, _accept))
        workers[name] = WorkerContract(name, spec, tuple(reads), tuple(writes), frozenset(spec.ops))
    if not bp.workers and not workers_broken:
        issues.append(BlueprintIssue("/workers", "a blueprint needs at least one worker"))

    stage_names = [s.name for s in bp.stages]
    stages: list[CompiledStage] = []
    for i, st in enumerate(bp.stages):
        if stage_names.count(st.name) > 1:
            issues.append(BlueprintIssue(f"/stages/{i}/name", f"duplicate stage name {st.name!r}"))
        stages.append(CompiledStage(st.name, cel(st.enter, f"/stages/{i}/enter"), cel(st.exit, f"/stages/{i}/exit")))

    rules: list[CompiledRule] = []
    for i, rule in enumerate(bp.rules):
        where = f"/rules/{i}"
        if rule.invoke not in bp.workers and not workers_broken:
            known = ", ".join(sorted(bp.workers)) or "none"
            issues.append(BlueprintIssue(f"{where}/invoke", f"unknown worker {rule.invoke!r} (workers: {known})"))
        if rule.stage is not None and rule.stage not in stage_names:
            issues.append(BlueprintIssue(f"{where}/stage", f"unknown stage {rule.stage!r}"))
        p = pattern(rule.on.path, f"{where}/on/path")
        if p is not None and (why := unreached(p.tokens)) is not None:
            message = f"rule path {rule.on.path!r} matches {NO_LOCATION} (the rule could never fire){why}"
            issues.append(BlueprintIssue(f"{where}/on/path", message))
        when = cel(rule.when, f"{where}/when", RULE_VARIABLES)
        gather = compile_gather(rule, i, lambda w, m: issues.append(BlueprintIssue(w, m)), cel, pattern, unreached)
        if p is not None and (gather is not None or (rule.join is None and rule.batch is None)):
            rules.append(CompiledRule(i, rule.name or f"rule{i}", rule, p, when, gather))

    retention: dict[str, CompiledRetention] = {}
    for i, ret in enumerate(bp.retention):
        compiled_ret = _retention(ret, i, bp, schema, pattern, issues)
        if compiled_ret is None:
            continue
        bound, contract, rule_spec = compiled_ret
        if bound.worker in workers or bound.worker in retention:
            issues.append(BlueprintIssue(f"/retention/{i}/name", f"worker name {bound.worker!r} is taken"))
            continue
        retention[bound.worker] = bound
        workers[bound.worker] = contract
        trigger = pattern(rule_spec.on.path, f"/retention/{i}/path")
        when = cel(rule_spec.when, f"/retention/{i}", RULE_VARIABLES)
        if trigger is not None:
            rules.append(CompiledRule(len(bp.rules) + i, rule_spec.name or bound.worker, rule_spec, trigger, when))

    invariants: list[CompiledInvariant] = []
    for i, inv in enumerate(bp.invariants):
        where = f"/invariants/{i}"
        p = pattern(inv.at, f"{where}/at")
        if p is not None and ("-" in p.tokens or "**" in p.tokens):
            issues.append(
                BlueprintIssue(
                    f"{where}/at", f"location {inv.at!r}: use '*' for items; '-' and '**' are not node locations"
                )
            )
            p = None
        if p is not None and (why := unreached(p.tokens)) is not None:
            issues.append(BlueprintIssue(f"{where}/at", f"location {inv.at!r} matches {NO_LOCATION}{why}"))
        expr = cel(inv.rule, f"{where}/rule", INVARIANT_VARIABLES)
        if p is not None and expr is not None:
            invariants.append(CompiledInvariant(i, inv.name or f"invariant{i}", p, inv.message, expr, check=inv.check))

    done = cel(bp.done, "/done")
    fail = cel(bp.fail, "/fail")
    approval = tuple(p for i, a in enumerate(bp.approval) if (p := pattern(a, f"/approval/{i}")))
    if bp.answer is not None:
        pattern(bp.answer, "/answer")
    task_tokens = pattern(bp.task, "/task")
    if task_tokens is not None and len(task_tokens.tokens) != 1:
        issues.append(BlueprintIssue("/task", f"the task pointer {bp.task!r} must name one top-level member"))

    if locations is not None:
        issues.extend(_dead_references(bp.state_schema, locations))
    if schema is not None:
        failed = {i.path for i in issues}  # a CEL that does not compile is reported once
        issues.extend(BlueprintIssue(w, m) for w, m in cel_reference_issues(bp) if w not in failed)
    if schema is not None:
        # The initial state needs only the schema: checked even when other parts have issues.
        for v in schema.validate_state(bp.initial_state):
            issues.append(BlueprintIssue("/initial_state" + v.path, f"{v.message} (schema {v.schema_path})"))
    visibility = visibility_issues(bp, list(workers), schema, lambda w, m: issues.append(BlueprintIssue(w, m)))
    issues.extend(BlueprintIssue(w, m) for w, m in guard_issues(bp))
    if issues or schema is None or salvaged is not None:
        return _Checked(issues)
    compiled = CompiledBlueprint(
        spec=bp,
        schema=schema,
        workers=workers,
        rules=rules,
        invariants=invariants,
        stages=stages,
        done=done,
        fail=fail,
        approval=approval,
        quarantine=quarantine,
        digest=hash_json(bp.to_json()),
        retention=retention,
        visibility=visibility,
        guard_terms=guard_terms(bp.guards),
    )
    for failure in check_all_invariants(compiled, compiled.initial_state()):
        issues.append(
            BlueprintIssue(
                f"/invariants/{failure.index}",
                f"initial state violates it at {failure.path or '/'}: {failure.reason}",
            )
        )
    return _Checked(issues, None if issues else compiled)


def _accept(data: dict[str, Any], label: str) -> tuple[CompiledBlueprint | None, list[tuple[str, str]]]:
    """A sub-board's blueprint compiled: (it, []) or (None, its issues)."""
    try:
        return compile_blueprint(data, source_label=label), []
    except BlueprintError as exc:
        return None, [(i.path, i.message) for i in exc.issues]


def _parsed(text: str) -> Pattern | None:
    try:
        return Pattern.parse(text)
    except PointerError:
        return None  # already reported where the pattern was parsed


def _dead_references(state_schema: Any, locations: SchemaIndex) -> list[BlueprintIssue]:
    """An issue for every ``x-refers-to`` annotation in the state schema whose pointer pattern is
    not a pattern or names no location of the schema (its offered values would always be none)."""
    found: list[BlueprintIssue] = []

    def walk(node: Any, at: str) -> None:
        if isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{at}/{i}")
            return
        if not isinstance(node, dict):
            return
        target = node.get(REFERS_TO)
        where = f"{at}/{escape_token(REFERS_TO)}"
        if isinstance(target, str):
            try:
                tokens = Pattern.parse(target).tokens
            except PointerError as exc:
                found.append(BlueprintIssue(where, f"x-refers-to {target!r} is not a pointer pattern: {exc}"))
            else:
                if not pattern_locations(locations, tokens):
                    found.append(
                        BlueprintIssue(where, f"x-refers-to {target!r} matches no location of the state schema")
                    )
        for key, value in node.items():
            if key in _DATA_KEYWORDS or (key == REFERS_TO and isinstance(value, str)):
                continue
            walk(value, f"{at}/{escape_token(key)}")

    walk(state_schema, "/schema")
    return found


def _within(p: Pattern, region: Pattern) -> bool:
    rt = region.tokens[:-1] if region.deep else region.tokens
    if len(p.tokens) < len(rt):
        return False
    return all(r == "*" or r == t or (r == "-" and t == "-") for r, t in zip(rt, p.tokens, strict=False))


__all__ = [
    "BlueprintError", "BlueprintIssue", "CompiledBlueprint", "CompiledRule", "CompiledStage",
    "InvariantSpec", "StageSpec", "compile_blueprint", "load_blueprint",
]  # fmt: skip


def _retention(
    ret: RetentionSpec,
    i: int,
    bp: Blueprint,
    schema: SchemaIndex | None,
    pattern: Any,
    issues: list[BlueprintIssue],
) -> tuple[CompiledRetention, WorkerContract, RuleSpec] | None:
    """A retention bound's system worker (reads the array, may only remove its items) and the
    rule that wakes it when an append leaves the array longer than ``keep_last``."""
    where = f"/retention/{i}"
    p: Pattern | None = pattern(ret.path, f"{where}/path")
    if p is None:
        return None
    if not p.tokens or any(t in ("*", "**", "-") for t in p.tokens):
        issues.append(BlueprintIssue(f"{where}/path", f"{ret.path!r} must name one array (no wildcards)"))
        return None
    items = Pattern.parse(ret.path + "/*")
    if schema is not None and not pattern_locations(schema, items.tokens):
        issues.append(BlueprintIssue(f"{where}/path", f"{ret.path!r} is not an array of the state schema"))
        return None
    name = ret.name or f"retention:{ret.path}"
    spec = WorkerSpec(
        instruction=f"system: keep the last {ret.keep_last} items of {ret.path}",
        function=RETENTION_FUNCTION,
        reads=[ret.path],
        writes=[ret.path + "/*"],
        ops=["remove"],
    )
    contract = WorkerContract(name, spec, (p,), (items,), frozenset(spec.ops))
    # size(state["a"]["b"]) > N: the array's members may be any keys, so index them as strings.
    accessor = "state" + "".join(f"[{json.dumps(t)}]" for t in p.tokens)
    rule = RuleSpec.model_validate(
        {
            "name": name,
            "on": {"op": "add", "path": ret.path + "/-"},
            "when": f"size({accessor}) > {ret.keep_last}",
            "invoke": name,
            "priority": RETENTION_PRIORITY,
        }
    )
    return CompiledRetention(name, ret.path, tuple(p.tokens), ret.keep_last), contract, rule
