"""Every subpackage of slateboard exports a curated ``__all__`` (issue 35).

For every subpackage (found with ``pkgutil``, so a new one is covered without editing this file):
``__all__`` exists and is exactly the set pinned in ``EXPECTED`` (adding or dropping a public
name is a decision made here too), has no duplicates, every name resolves, every exported class
and function documents itself, and every name is *needed outside its subpackage*:

* referenced outside it: by the sources of the other subpackages or of ``slateboard`` itself,
  ``eval/src``, ``benchmarks/``, ``examples/``, ``docs/**/*.md`` or ``README.md`` (tests never
  count: a name only tests use is not public);
* or a type in the signature of an exported name that is needed (users must be able to
  annotate what the API takes and returns: ``Handle`` of ``View.handles``).

A name nothing outside uses belongs in its private module, where the tests import it from.

What counts as a reference, so that a common word (``wait``, ``tool``) is not found by accident:
in Python, an import of the name from the package or one of its modules (relative imports
resolved), an attribute ``M.name`` of a name bound to one of them, or a dotted
``slateboard.<package>[.module].name``; in Markdown, the name as a word inside code (inline or
fenced) on a page that names the package, and fenced Python as above; in any file, a dotted path
``slateboard.<package>[.module].name`` or ``...module:name`` (a blueprint's function worker).
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

import slateboard

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".json", ".txt"}
FENCE = re.compile(r"^(```|~~~)[^\n]*\n(.*?)^\1", re.M | re.S)
INLINE_CODE = re.compile(r"`([^`\n]+)`")


def _corpus() -> Iterator[Path]:
    """Every file whose references count (tests excluded)."""
    yield from sorted((SRC / "slateboard").rglob("*.py"))
    for folder in (ROOT / "eval" / "src", ROOT / "benchmarks", ROOT / "examples"):
        yield from sorted(p for p in folder.rglob("*") if p.suffix in TEXT_SUFFIXES and p.is_file())
    yield from sorted(p for p in (ROOT / "docs").rglob("*.md"))
    yield ROOT / "README.md"


def _module_of(path: Path) -> str | None:
    """The dotted module a file of src/ is (``None`` elsewhere)."""
    try:
        rel = path.relative_to(SRC)
    except ValueError:
        return None
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _absolute(node: ast.ImportFrom, module: str | None, is_package: bool) -> str:
    """The absolute module an ``ImportFrom`` names (relative ones resolved against ``module``)."""
    if not node.level:
        return node.module or ""
    if module is None:
        return node.module or ""
    base = module.split(".")
    # A package's own module is its package; a plain module's package is its parent.
    drop = node.level - 1 if is_package else node.level
    base = base[: len(base) - drop] if drop else base
    return ".".join([*base, *([node.module] if node.module else [])])


@cache
def _nodes(source: str) -> tuple[ast.AST, ...]:
    """The imports and attributes of a piece of Python (parsed once for every package's scan)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    return tuple(n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom | ast.Attribute))


def _python_refs(source: str, package: str, names: set[str], module: str | None, is_package: bool) -> set[str]:
    """The ``names`` of ``package`` a piece of Python refers to (imports and ``M.name``)."""
    nodes = _nodes(source)
    found: set[str] = set()
    bound: set[str] = set()  # local names bound to the package or one of its modules
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            origin = _absolute(node, module, is_package)
            for alias in node.names:
                if _inside(origin, package) and alias.name in names:
                    found.add(alias.name)
                elif _inside(f"{origin}.{alias.name}", package):
                    bound.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _inside(alias.name, package) and alias.asname:
                    bound.add(alias.asname)
    for node in nodes:
        if isinstance(node, ast.Attribute) and node.attr in names:
            owner = _dotted(node.value)
            if owner is not None and (owner in bound or _inside(owner, package)):
                found.add(node.attr)
    return found


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        owner = _dotted(node.value)
        return None if owner is None else f"{owner}.{node.attr}"
    return None


def _dotted_refs(text: str, package: str, names: set[str]) -> set[str]:
    pattern = re.compile(re.escape(package) + r"(?:\.\w+)*[.:](\w+)")
    return {m.group(1) for m in pattern.finditer(text) if m.group(1) in names}


def _markdown_refs(text: str, package: str, names: set[str]) -> set[str]:
    found: set[str] = set()
    code = [m.group(2) for m in FENCE.finditer(text)]
    for block in code:
        found |= _python_refs(block, package, names, None, False)
    if not re.search(re.escape(package) + r"\b", text):
        return found
    code += INLINE_CODE.findall(FENCE.sub("", text))
    words = {w for chunk in code for w in re.findall(r"\w+", chunk)}
    return found | (words & names)


@cache
def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def references(package: str, names: Iterable[str]) -> dict[str, list[str]]:
    """For each of ``names`` (exported by the dotted ``package``), the repository-relative files
    outside the package's folder that refer to it (empty: nothing outside uses it)."""
    wanted = set(names)
    result: dict[str, list[str]] = {name: [] for name in wanted}
    for path in _corpus():
        module = _module_of(path)
        if module is not None and _inside(module, package):
            continue
        text = _text(path)
        found = _dotted_refs(text, package, wanted)
        if path.suffix == ".py":
            found |= _python_refs(text, package, wanted, module, path.name == "__init__.py")
        elif path.suffix == ".md":
            found |= _markdown_refs(text, package, wanted)
        for name in found:
            result[name].append(path.relative_to(ROOT).as_posix())
    return result


def unreferenced(package: str, names: Iterable[str]) -> list[str]:
    """The ``names`` of ``package`` nothing outside it refers to, sorted."""
    return sorted(name for name, where in references(package, names).items() if not where)


# -- what is needed through a signature --------------------------------------------------------
def _signatures(obj: object) -> list[str]:
    """The text of the annotations of ``obj``: its signature (a class: its constructor), and for
    a class those of its public methods, properties and annotated attributes."""
    texts: list[str] = []

    def add(target: object) -> None:
        with contextlib.suppress(TypeError, ValueError):  # builtins without a signature
            texts.append(str(inspect.signature(target)))  # type: ignore[arg-type]

    if inspect.isclass(obj):
        add(obj)
        for key, value in vars(obj).items():
            if key.startswith("_") and key != "__init__":
                continue
            if isinstance(value, staticmethod | classmethod):
                value = value.__func__
            if isinstance(value, property):
                value = value.fget
            if callable(value):
                add(value)
        texts += [str(v) for v in vars(obj).get("__annotations__", {}).values()]
    elif callable(obj):
        add(obj)
    return texts


def needed(package: str, names: Iterable[str]) -> dict[str, str]:
    """Why each needed name of ``names`` (exported by ``package``) is public: the first file
    outside the package that refers to it, or ``"signature of X"`` for a type in the signature of
    another needed name ``X``. A name missing from the answer is needed by nothing."""
    module = importlib.import_module(package)
    wanted = set(names)
    why = {name: where[0] for name, where in references(package, wanted).items() if where}
    grown = True
    while grown:  # a type of a needed name's signature is needed, and so on
        grown = False
        for user in sorted(why):
            text = " ".join(_signatures(getattr(module, user)))
            for name in sorted(wanted - why.keys()):
                if re.search(rf"\b{re.escape(name)}\b", text):
                    why[name] = f"signature of {user}"
                    grown = True
    return why


# -- the pinned public sets ---------------------------------------------------------------------
EXPECTED: dict[str, set[str]] = {
    "slateboard.blueprint": {
        "Blueprint",
        "BlueprintError",
        "BlueprintIssue",
        "CircuitSpec",
        "CompiledBlueprint",
        "InvariantSpec",
        "Limits",
        "RuleSpec",
        "StageSpec",
        "Trigger",
        "WorkerSpec",
        "compile_blueprint",
        "load_blueprint",
    },
    "slateboard.builder": {"ALL", "APPEND", "Board", "EACH", "part", "ref"},
    "slateboard.cli": {"CliError", "EXIT_ERROR", "EXIT_USAGE", "app", "main"},
    "slateboard.demo": set(),
    "slateboard.temporal": {
        "DEFAULT_TASK_QUEUE",
        "BoardActivities",
        "BoardStart",
        "BoardWorker",
        "BoardWorkflow",
        "EngineError",
        "TeamActivities",
        "TeamRefError",
        "TeamStart",
        "TeamWorkflow",
        "cancel_board",
        "connect",
        "resolve_address",
        "signal_approval",
        "start_board",
        "stored_start",
        "submit_board",
        "submit_team",
        "team_result",
        "workflow_id",
    },
    "slateboard.guards": {"GuardSet", "GuardVerdict", "build_guards", "rerun_function_guards"},
    "slateboard.kernel": {
        "CelCompileError",
        "CelExpr",
        "CompiledInvariant",
        "Decision",
        "Event",
        "GENESIS",
        "InvariantContext",
        "JSON",
        "JSONValue",
        "Kernel",
        "KernelBlueprint",
        "KernelBusy",
        "MISSING",
        "Pattern",
        "PointerError",
        "Proposal",
        "PythonInvariant",
        "Record",
        "RecordKind",
        "ReplayReport",
        "Usage",
        "WorkerContract",
        "WorkerTerms",
        "canonical_bytes",
        "canonical_str",
        "compile_cel",
        "expand",
        "format_pointer",
        "hash_json",
        "parse_pointer",
        "replay",
        "resolve",
        "state_hash",
    },
    "slateboard.mcp": {"ServerSpec", "mcp_tools", "serve_board"},
    "slateboard.memory": {
        "Distiller",
        "Embed",
        "EmbeddingMemory",
        "Episode",
        "Fact",
        "FactStore",
        "NewFact",
        "RecallWorker",
        "distill_board",
        "episodes",
        "open_memory",
    },
    "slateboard.models": {
        "AnthropicModel",
        "DEFAULT_MAX_TOKENS",
        "DEFAULT_TEMPERATURE",
        "DEFAULT_TIMEOUT",
        "Generation",
        "GenerationUsage",
        "Message",
        "Model",
        "ModelAuthError",
        "ModelBadResponse",
        "ModelConfigError",
        "ModelError",
        "ModelNotFound",
        "ModelRateLimited",
        "ModelRequestError",
        "ModelSchemaRefused",
        "ModelScriptError",
        "ModelServerError",
        "ModelTimeout",
        "ModelUnavailable",
        "OpenAICompatModel",
        "RecordingModel",
        "ReplayModel",
        "RetryPolicy",
        "Role",
        "ScriptedModel",
        "StructuredOutput",
        "resolve_model",
    },
    "slateboard.runtime": {
        "ApprovalError",
        "BoardSession",
        "Held",
        "RunEvent",
        "RunResult",
        "Runner",
        "RunnerError",
        "RunnerProcess",
        "RunnerStats",
        "TokenUsage",
        "WaitTimeout",
        "WatchPastEnd",
        "approve",
        "board_result",
        "create_board",
        "held_proposals",
        "refuse",
        "resolve_runner_model",
        "submit",
        "verify_board",
        "wait",
        "watch",
    },
    "slateboard.scheduling": {
        "Agenda",
        "AgendaOrder",
        "BoardSummary",
        "CANCELLED",
        "CLAIMED",
        "ControlUnit",
        "DONE",
        "Diagnostic",
        "Invocation",
        "PENDING",
        "STAGE_ENTERED",
        "Scheduled",
        "Scheduler",
        "Selection",
        "StageEvent",
        "StageTracker",
        "StageUpdate",
    },
    "slateboard.stores": {
        "AgendaChanges",
        "AgendaError",
        "AppendResult",
        "BOARD_STATUSES",
        "BoardExists",
        "BoardInfo",
        "BoardNotFound",
        "Claim",
        "ClaimRequest",
        "CommitStats",
        "Conflict",
        "DuplicateInvocationCommit",
        "Lease",
        "LeaseLost",
        "LoadedBoard",
        "MemoryStore",
        "OpenedStore",
        "ReportsCommits",
        "ReportsLeases",
        "ScansStalledBoards",
        "SchemaTooNew",
        "ServesManyRunners",
        "Snapshot",
        "Store",
        "StoreCorrupt",
        "StoreError",
        "StoreMissing",
        "StoreUnavailable",
        "WatchesBoards",
        "WatchesWork",
        "in_memory_url",
        "open_store",
        "sqlite_path",
        "supports",
    },
    "slateboard.team": {
        "Agent",
        "ApprovalRequest",
        "BLACKBOARD_EVENTS",
        "BUDGET_EXCEEDED",
        "Budget",
        "BudgetPolicy",
        "BudgetStatus",
        "DEFAULT_COORDINATOR_INSTRUCTIONS",
        "DEFAULT_DECIDER_INSTRUCTIONS",
        "EventCallback",
        "ROUND_ROBIN_RAW",
        "ResumeError",
        "Spend",
        "Team",
        "TeamResult",
        "TeamStream",
        "blackboard_blueprint",
        "make_entry",
    },
    "slateboard.testing": {"Board", "OpenStore", "StoreConformance", "entry", "require"},
    "slateboard.testing.conformance": {"StoreConformance", "require"},
    "slateboard.views": {
        "Handle",
        "View",
        "ViewCache",
        "build_view",
        "kernel_view",
        "parse_expand_request",
        "quarantine_hidden",
        "readable_state",
    },
    "slateboard.web": {"MIN_TOKEN_CHARS", "create_app", "is_loopback", "redact_url"},
    "slateboard.workers": {
        "Decoding",
        "Feedback",
        "FunctionWorker",
        "LLMWorker",
        "Tool",
        "ToolResult",
        "Worker",
        "WorkerConfigError",
        "WorkerReply",
        "feedback_lines",
        "function_worker",
        "make_worker",
        "make_workers",
        "tool",
    },
    "slateboard.workers.constrain": {
        "ConstrainedSchema",
        "DEFAULT_MAX_OPS",
        "PATCH_KEY",
        "generic_patch_schema",
        "proposal_schema",
        "self_contained",
        "sketch_state",
    },
}
"""Each subpackage's ``__all__``: change it here when a name is deliberately made public or
private (the lead reviews these lines)."""


def _subpackages() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(slateboard.__path__, "slateboard.") if m.ispkg)


SUBPACKAGES = _subpackages()


def _module(name: str) -> ModuleType:
    return importlib.import_module(name)


def test_every_subpackage_is_pinned() -> None:
    # A new subpackage needs its own curated __all__ and a line in EXPECTED.
    assert sorted(EXPECTED) == SUBPACKAGES


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_all_is_the_pinned_set(package: str) -> None:
    module = _module(package)
    assert hasattr(module, "__all__"), f"{package} has no __all__"
    exported = list(module.__all__)
    assert len(exported) == len(set(exported)), f"duplicates in {package}.__all__"
    assert set(exported) == EXPECTED[package]


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_every_name_resolves_and_documents_itself(package: str) -> None:
    module = _module(package)
    for name in module.__all__:
        assert hasattr(module, name), f"{package}.{name} does not resolve"
        obj = getattr(module, name)
        if not (inspect.isclass(obj) or inspect.isroutine(obj)):
            continue  # constants and type aliases keep no docstring of their own
        doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
        # A dataclass without a docstring gets its signature as one: that is no documentation.
        documented = isinstance(doc, str) and doc.strip() and not doc.startswith(f"{obj.__name__}(")
        assert documented, f"{package}.{name} has no docstring"


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_every_name_is_needed_outside_its_subpackage(package: str) -> None:
    names = _module(package).__all__
    unneeded = sorted(set(names) - needed(package, names).keys())
    assert not unneeded, f"{package} exports names nothing outside it needs (move them out of __all__): {unneeded}"


def test_the_scan_finds_unused_names() -> None:
    # The scan can fail: a name nobody refers to, a name only tests use (StateHasher), and a
    # common word that only appears on pages not about the package are all reported.
    assert unreferenced("slateboard.kernel", ["Kernel", "NoSuchExport", "StateHasher"]) == [
        "NoSuchExport",
        "StateHasher",
    ]
    assert unreferenced("slateboard.testing", ["compiled"]) == ["compiled"]
    assert "NoSuchExport" not in needed("slateboard.kernel", ["Kernel", "NoSuchExport"])


def test_the_scan_sees_each_kind_of_reference() -> None:
    refs = references("slateboard.stores", ["open_store", "supports"])
    assert "src/slateboard/__init__.py" in refs["open_store"]  # a relative import
    assert "src/slateboard/runtime/distributed.py" in refs["supports"]
    assert "docs/python-builder.md" in references("slateboard.builder", ["EACH"])["EACH"]  # markdown code
    assert needed("slateboard.views", ["View", "Handle"])["Handle"] == "signature of View"
