"""The package's import structure, read from the source with ``ast`` (nothing is imported).

What it guards:

- zero import cycles between modules, counting every import (module level, under
  ``TYPE_CHECKING`` and inside functions: a cycle hidden in a function is still a cycle);
- zero cycles between the top-level parts of the package (``kernel``, ``blueprint``, ...), and the
  kernel on the ground floor: it imports nothing from slateboard but itself, ``errors`` and
  ``vocabulary`` (which import nothing from slateboard);
- no module imports a ``_``-prefixed name, or a ``_``-prefixed module, from another package;
- no import inside a function (or under ``TYPE_CHECKING``) that would close a cycle if it were
  written at module level, i.e. none that dodges a cycle;
- the core never imports the evaluation distribution (``slateboard_eval``, eval/): that one
  depends on the core and plugs its commands in through an entry point.
- the runtime tells stores apart by their declared capabilities (``supports``), never by class,
  backend module or URL;
- the vocabulary's words are passed by constant, never spelled out: no string literal as the
  kind of an emitted run event, nor as the status a store's ``set_status`` gets (``kernel.action``
  kinds: ``tests/kernel/test_kernel_vocabulary.py``), nor compared (``==``, ``!=``, ``in``) with
  an attribute named ``outcome``, ``status`` or ``kind``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import slateboard.vocabulary as vocabulary

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "slateboard"

# Import cycles that may stand: none. (The runtime's approval -> runner -> session circle went
# with the step engine, issue 12.)
ALLOWED_CYCLES: frozenset[frozenset[str]] = frozenset()
ALLOWED_PREFIXES = ("slateboard.runtime.", "slateboard.team.")


@dataclass(frozen=True)
class Import:
    """One imported name (or module) as the source spells it."""

    importer: str
    target: str  # the module that is imported or that holds ``name``
    name: str | None  # the name taken from ``target`` (None for ``import x.y``)
    where: str  # "module", "type-checking" or "function"
    line: int


def _modules() -> dict[str, tuple[Path, bool]]:
    out: dict[str, tuple[Path, bool]] = {}
    for path in sorted((SRC / ROOT).rglob("*.py")):
        rel = path.relative_to(SRC).with_suffix("")
        is_package = rel.name == "__init__"
        parts = rel.parts[:-1] if is_package else rel.parts
        out[".".join(parts)] = (path, is_package)
    return out


MODULES = _modules()


def _package(module: str) -> str:
    return module if MODULES[module][1] else module.rsplit(".", 1)[0]


def _imports(module: str) -> Iterator[Import]:
    path, is_package = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))

    def visit(node: ast.AST, where: str) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                inner = "function"
            elif isinstance(child, ast.If) and where == "module" and "TYPE_CHECKING" in ast.unparse(child.test):
                inner = "type-checking"
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = module.split(".") if is_package else module.split(".")[:-1]
                    base = base[: len(base) - (child.level - 1)]
                    source = ".".join([*base, child.module] if child.module else base)
                else:
                    source = child.module or ""
                for alias in child.names:
                    sub = f"{source}.{alias.name}"
                    if sub in MODULES:  # ``from . import module``
                        yield Import(module, sub, None, inner, child.lineno)
                    else:
                        yield Import(module, source, alias.name, inner, child.lineno)
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    yield Import(module, alias.name, None, inner, child.lineno)
            yield from visit(child, inner)

    for imp in visit(tree, "module"):
        if imp.target == ROOT or imp.target.startswith(ROOT + "."):
            yield imp


IMPORTS = [imp for module in MODULES for imp in _imports(module) if imp.target in MODULES]


def _graph(kinds: set[str]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for imp in IMPORTS:
        if imp.where in kinds and imp.target != imp.importer:
            graph[imp.importer].add(imp.target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one member (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[frozenset[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(frozenset(component))
    return out


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = {start}, [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        for nxt in graph.get(node, ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


ALL_KINDS = {"module", "type-checking", "function"}


def test_the_parser_sees_the_package() -> None:
    # Guards the guard: if the walk found nothing, every other test here would pass vacuously.
    assert len(MODULES) > 50
    assert any(i.importer == "slateboard.kernel.kernel" and i.target == "slateboard.kernel.patch" for i in IMPORTS)
    assert any(i.where == "function" for i in IMPORTS)
    assert any(i.where == "type-checking" for i in IMPORTS)
    cyclic = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(cyclic) == [frozenset({"a", "b", "c"})]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_between_modules() -> None:
    cycles = _cycles(_graph(ALL_KINDS))
    for allowed in ALLOWED_CYCLES:
        assert all(m.startswith(ALLOWED_PREFIXES) for m in allowed)
    unexpected = [sorted(c) for c in cycles if c not in ALLOWED_CYCLES]
    assert unexpected == [], f"import cycles: {unexpected}"


def test_no_cycles_between_the_parts_of_the_package() -> None:
    def part(module: str) -> str:
        return ".".join(module.split(".")[:2])

    graph: dict[str, set[str]] = {}
    for imp in IMPORTS:
        a, b = part(imp.importer), part(imp.target)
        graph.setdefault(a, set())
        if a != b and a != ROOT and b != ROOT:
            graph[a].add(b)
    assert _cycles(graph) == [], "the packages of slateboard import each other in a circle"


GROUND_FLOOR = frozenset({"slateboard.errors", "slateboard.vocabulary"})
"""Modules that import nothing from slateboard, so that every layer, the kernel included, may."""


def test_the_kernel_is_the_ground_floor() -> None:
    outside = sorted(
        f"{i.importer}:{i.line} imports {i.target}"
        for i in IMPORTS
        if i.importer.startswith("slateboard.kernel")
        and not i.target.startswith("slateboard.kernel")
        and i.target not in GROUND_FLOOR
    )
    assert outside == []
    for module in sorted(GROUND_FLOOR):
        assert module in MODULES
        below = [f"{i.importer}:{i.line}" for i in IMPORTS if i.importer == module]
        assert below == [], f"{module} must import nothing from slateboard"


def test_no_private_names_from_another_package() -> None:
    bad = []
    for imp in IMPORTS:
        if _package(imp.importer) == _package(imp.target):
            continue
        private_module = any(p.startswith("_") and not p.startswith("__") for p in imp.target.split("."))
        private_name = imp.name is not None and imp.name.startswith("_") and not imp.name.startswith("__")
        if private_module or private_name:
            bad.append(f"{imp.importer}:{imp.line} imports {imp.name or '*'} from {imp.target}")
    assert bad == []


@pytest.mark.parametrize("kind", ["function", "type-checking"])
def test_no_deferred_import_dodges_a_cycle(kind: str) -> None:
    # A deferred import is fine (start-up cost, optional dependencies) unless writing it at
    # module level would close a cycle: then it only hides the cycle.
    module_level = _graph({"module"})
    dodges = []
    for imp in IMPORTS:
        if imp.where != kind or imp.target == imp.importer:
            continue
        if _reaches(module_level, imp.target, imp.importer):
            if any(imp.importer in c and imp.target in c for c in ALLOWED_CYCLES):
                continue
            dodges.append(f"{imp.importer}:{imp.line} imports {imp.target} inside a {kind} block")
    assert dodges == []


def test_the_core_never_imports_the_evaluation_distribution() -> None:
    # Every import statement of every module, wherever it stands (the walk above keeps only
    # slateboard's own); the CLI finds slateboard-eval by entry point, never by an import.
    bad = []
    for module, (path, _) in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            bad += [
                f"{module}:{getattr(node, 'lineno', 0)} imports {n}"
                for n in names
                if n.split(".")[0] == "slateboard_eval"
            ]
    assert bad == []
    assert "slateboard.cli._plugins" in MODULES  # the walk covers the CLI, where a plugin import would be


BACKEND_MODULES = frozenset({"slateboard.stores.memory", "slateboard.stores.postgres", "slateboard.stores.sqlite"})
BACKEND_CLASSES = frozenset({"MemoryStore", "PostgresStore", "SqliteStore"})


def _store_class_or_url_tests(source: str, where: str) -> Iterator[str]:
    """The places ``source`` tells stores apart by class or URL instead of by capability."""
    for node in ast.walk(ast.parse(source, where)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)} if len(node.args) > 1 else set()
            if named & BACKEND_CLASSES:
                yield f"{where}:{node.lineno} isinstance(..., {', '.join(sorted(named & BACKEND_CLASSES))})"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("startswith", "endswith") and "url" in ast.unparse(node.func.value).lower():
                yield f"{where}:{node.lineno} {ast.unparse(node.func)}(...)"
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(n, ast.Attribute) and n.attr == "url" for side in sides for n in ast.walk(side)):
                yield f"{where}:{node.lineno} compares a store URL: {ast.unparse(node)}"


def test_runtime_asks_stores_for_capabilities() -> None:
    # The runtime serves any backend that declares what it needs (``supports(store, ...)``):
    # a test of a store's class, module or URL would tie it to today's three backends.
    bad = [
        f"{i.importer}:{i.line} imports {i.name or i.target} from {i.target}"
        for i in IMPORTS
        if i.importer.startswith("slateboard.runtime") and (i.target in BACKEND_MODULES or i.name in BACKEND_CLASSES)
    ]
    for module, (path, _) in MODULES.items():
        if module.startswith("slateboard.runtime"):
            bad.extend(_store_class_or_url_tests(path.read_text(encoding="utf-8"), module))
    assert bad == []


def test_the_capability_check_sees_class_and_url_tests() -> None:
    # The check above must be able to fail: the shapes it forbids, and one it allows.
    sample = (
        "def f(store):\n"
        "    if isinstance(store, PostgresStore): pass\n"
        "    if store.url.lower().startswith('sqlite'): pass\n"
        "    if store.url == 'memory://': pass\n"
        "    if supports(store, WatchesBoards) and isinstance(store, Store): pass\n"
    )
    found = list(_store_class_or_url_tests(sample, "sample"))
    assert [line.split(" ", 1)[0] for line in found] == ["sample:2", "sample:3", "sample:4"]


# Properties of runtime/ that only hand on another object's attribute (``return self.a.b``):
# public API (Runner's: MCP and users read them). Shrink it, never grow it.
ALLOWED_FORWARDING = frozenset(
    {
        "runner.Runner.kernel",
        "runner.Runner.blueprint",
        "runner.Runner.agenda",
        "runner.Runner.workers",
        "step.Transacted.record",  # a result's shorthand for its decision's record
    }
)


def _forwarding_properties(source: str, module: str) -> Iterator[str]:
    """``module.Class.name`` of each property in ``source`` whose body is ``return self.a.b``."""
    for cls in ast.parse(source).body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for fn in cls.body:
            if not isinstance(fn, ast.FunctionDef) or not any(
                isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list
            ):
                continue
            body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            if len(body) != 1 or not isinstance(body[0], ast.Return):
                continue
            value = body[0].value
            if (
                isinstance(value, ast.Attribute)
                and isinstance(value.value, ast.Attribute)
                and isinstance(value.value.value, ast.Name)
                and value.value.value.id == "self"
            ):
                yield f"{module}.{cls.name}.{fn.name}"


def test_runtime_adds_no_forwarding_property() -> None:
    # BoardSession is the board's step engine (issue 35): a property that only passes another
    # object's attribute on is a layer a reader must see through.
    found = set()
    for module, (path, _) in MODULES.items():
        if module.startswith("slateboard.runtime."):
            found |= set(_forwarding_properties(path.read_text(encoding="utf-8"), module.rsplit(".", 1)[1]))
    assert found - ALLOWED_FORWARDING == set()
    sample = "class A:\n    @property\n    def k(self):\n        '''doc'''\n        return self.engine.kernel\n"
    assert list(_forwarding_properties(sample, "m")) == ["m.A.k"]


# -- the vocabulary, passed by constant -------------------------------------------------------------
EMIT_FUNCTIONS = frozenset({"emit", "_emit", "RunEvent"})
"""What takes a run event's kind first: the engines' and teams' emit functions and the event type."""
STATUS_SETTERS = frozenset({"set_status"})
"""A store's setter of a board's lifecycle status: ``set_status(board_id, status, reason)``."""


def _literal_vocabulary(source: str, where: str) -> Iterator[str]:
    """The places ``source`` spells a vocabulary word out as a string literal: the kind passed to
    an emit function (its first argument, or ``kind=``), the status passed to a store's status
    setter (its second argument, or ``status=``)."""
    for node in ast.walk(ast.parse(source, where)):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name in EMIT_FUNCTIONS:
            position, keyword, what = 0, "kind", "event kind"
        elif name in STATUS_SETTERS:
            position, keyword, what = 1, "status", "board status"
        else:
            continue
        args = [*node.args[position : position + 1], *(k.value for k in node.keywords if k.arg == keyword)]
        for arg in args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                yield f"{where}:{node.lineno} {name}(...) gets the {what} {arg.value!r} as a literal"


COMPARED_ATTRIBUTES = frozenset({"outcome", "status", "kind"})
"""Attributes whose value is a vocabulary word (a record's outcome and kind, an invocation's or a
board's status, an event's kind): what they are compared with must be a constant."""


def _vocabulary_words() -> frozenset[str]:
    """Every word of every vocabulary tuple (``RECORD_KINDS``, ``OUTCOMES``, ...)."""
    tuples = [v for n, v in vars(vocabulary).items() if n.isupper() and isinstance(v, tuple)]
    return frozenset(w for t in tuples for w in t if isinstance(w, str))


def _literal_comparisons(source: str, where: str, words: frozenset[str]) -> Iterator[str]:
    """The places ``source`` compares an attribute named in ``COMPARED_ATTRIBUTES`` with a string
    literal that is one of ``words``: ``x.outcome == "accepted"``, ``"done" != x.status``,
    ``x.kind in ("proposal", ...)``."""
    for node in ast.walk(ast.parse(source, where)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, operands[:-1], operands[1:], strict=True):
            if not isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
                continue
            for attr, other in ((left, right), (right, left)):
                if not (isinstance(attr, ast.Attribute) and attr.attr in COMPARED_ATTRIBUTES):
                    continue
                items = other.elts if isinstance(other, (ast.Tuple, ast.List, ast.Set)) else [other]
                for item in items:
                    if isinstance(item, ast.Constant) and isinstance(item.value, str) and item.value in words:
                        yield f"{where}:{node.lineno} compares .{attr.attr} with the literal {item.value!r}"


def test_vocabulary_words_are_passed_by_constant() -> None:
    # A literal kind or status is a word mypy may check but a reader cannot find: name the
    # constant of slateboard.vocabulary instead (grep finds every emitter of an event by it).
    bad: list[str] = []
    words = _vocabulary_words()
    for module, (path, _) in MODULES.items():
        source = path.read_text(encoding="utf-8")
        bad.extend(_literal_vocabulary(source, module))
        bad.extend(_literal_comparisons(source, module, words))
    assert bad == []


def test_the_vocabulary_check_sees_literal_kinds_and_statuses() -> None:
    # The check above must be able to fail: the shapes it forbids, and those it allows.
    sample = (
        "async def f(self, store, emit):\n"
        "    self.emit('run.started', version=1)\n"
        "    await self.emit(kind='blackboard.started')\n"
        "    emit('stage.changed')\n"
        "    RunEvent('run.ended', 'b1', {})\n"
        "    await store.set_status('b1', 'done', 'finished')\n"
        "    await store.set_status(board_id='b1', status='failed')\n"
        "    self.emit(RUN_STARTED, version=1)\n"
        "    await store.set_status('b1', BOARD_DONE, 'done')\n"
        "    board.set_status(inv_id, row, DONE)\n"
        "    other('run.started')\n"
    )
    found = sorted(line.split(" ", 1)[0] for line in _literal_vocabulary(sample, "sample"))
    assert found == ["sample:2", "sample:3", "sample:4", "sample:5", "sample:6", "sample:7"]


def test_the_vocabulary_check_sees_literal_comparisons() -> None:
    # The comparison check must be able to fail, and let through a word outside the vocabulary
    # (a stage, a circuit action) and a literal compared with anything but those attributes.
    sample = (
        "def f(rec, inv, board, event, row):\n"
        "    if rec.outcome == 'accepted': pass\n"
        "    if 'done' != inv.status: pass\n"
        "    if rec.kind in ('proposal', 'parse'): pass\n"
        "    if event.kind not in ['run.ended']: pass\n"
        "    if 0 < rec.version and board.status == 'paused': pass\n"
        "    if rec.outcome == OUTCOME_ACCEPTED: pass\n"
        "    if rec.stage == 'stale' or rec.kind == 'not-a-word': pass\n"
        "    if row['status'] == 'done' or outcome == 'held': pass\n"
        "    if rec.outcome is not None and rec.reason == 'accepted': pass\n"
    )
    found = sorted(line.split(" ", 1)[0] for line in _literal_comparisons(sample, "sample", _vocabulary_words()))
    assert found == ["sample:2", "sample:3", "sample:4", "sample:5", "sample:6"]
