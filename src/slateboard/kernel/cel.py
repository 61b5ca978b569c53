"""CEL expressions: compiled once when a blueprint is accepted, evaluated deterministically.

slateboard uses the ``common-expression-language`` package (a Rust CEL implementation). An
expression that does not parse rejects the blueprint. Evaluation errors (a missing field, a
type mismatch) are reported as values, never raised, so the kernel stays total.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError, detached
from .celcost import CostModel, deep_collection_max

_ALL: frozenset[str] = frozenset({"\x00all"})

MAX_CEL_CHARS = 4096
"""Longest accepted expression. Far above any real rule, and far below the column (65,535)
past which the Rust parser panics while formatting a syntax error."""

MAX_COMPREHENSION_NESTING = 3
"""Default deepest nesting of comprehension macros (``all``, ``exists``, ``exists_one``,
``map``, ``filter``) in one expression (a blueprint may raise it, ``limits.cel_nesting``).
Each level multiplies the cost by a collection's size; the evaluation budget bounds the
product, and this cap keeps the budget's estimate close to the real cost."""

DEFAULT_CEL_BUDGET = 2_000_000
"""Default evaluation budget of one CEL evaluation, in estimated steps (see ``celcost``; a
step is about one AST node evaluated, 50-100 ns of the Rust evaluator): a two-level
comprehension over 700 items fits (~0.1 s); seven nested ``.all()`` over 10 items (23 million
steps, 3.5 s) does not."""

BUDGET_EXCEEDED = "CEL evaluation budget exceeded"

_MACROS = re.compile(r"\.\s*(?:all|exists_one|exists|map|filter)\s*\(")
_TOKENS = re.compile(r"\"\"\"|'''|[\"'()]|\\.")


def _is_panic(exc: BaseException) -> bool:
    """True for pyo3's PanicException (a Rust panic): a BaseException subclass, so ``except
    Exception`` misses it, and its module only exists after the first panic."""
    return type(exc).__name__ == "PanicException"


def comprehension_nesting(source: str) -> int:
    """How deep comprehension macros nest in ``source`` (string literals are skipped)."""
    stack: list[bool] = []  # one entry per open parenthesis: does it open a macro?
    deepest = 0
    quote: str | None = None
    pos = 0
    macro_at = {m.end() - 1 for m in _MACROS.finditer(source)}
    for m in _TOKENS.finditer(source):
        token, pos = m.group(), m.start()
        if quote is not None:
            if token == quote:
                quote = None
            continue
        if token in ('"', "'", '"""', "'''"):
            quote = token
        elif token == "(":
            stack.append(pos in macro_at)
            deepest = max(deepest, sum(stack))
        elif token == ")" and stack:
            stack.pop()
    return deepest


class CelCompileError(UsageError, ValueError):
    """A CEL expression that does not compile; the message is the parser's, on one line."""


@dataclass(frozen=True, slots=True)
class CelResult:
    """The value of an evaluation, or the error that stopped it."""

    value: Any = None
    error: str | None = None
    over_budget: bool = False
    """True when the expression was not evaluated because its estimated cost is over budget."""


@dataclass(frozen=True, slots=True)
class CelExpr:
    """A compiled CEL expression, the variable names it refers to, and its evaluation budget.

    ``budget`` bounds the estimated steps of one evaluation (None: unbounded); over it the
    expression is not run and the result is an error with ``over_budget`` set. The estimate
    depends only on the expression and the values, so the same state always gets the same
    answer (decisions replay).
    """

    source: str
    program: Any
    variables: frozenset[str]
    cost: CostModel
    budget: int | None = DEFAULT_CEL_BUDGET

    @property
    def variables_known(self) -> bool:
        """False when the CEL library could not list the variables (``uses`` then says yes to all)."""
        return self.variables is not _ALL

    def uses(self, name: str) -> bool:
        """True when the expression may mention variable ``name`` (so callers may skip costly ones).

        When the variable list could not be read, every name counts as used (safe default).
        """
        return self.variables is _ALL or name in self.variables

    def estimate(self, context: dict[str, Any] | SharedContext) -> int:
        """The estimated steps of evaluating with ``context`` (see ``celcost``)."""
        if self.cost.static is not None:
            return self.cost.static  # no value can change it (see CostModel.static)
        values = context.values if isinstance(context, SharedContext) else context
        if self.variables is not _ALL:
            # Only what the expression names counts: a large unused variable costs nothing.
            values = {k: v for k, v in values.items() if k in self.variables}
        if isinstance(context, SharedContext):
            return self.cost.estimate(values, context.deep_max)
        return self.cost.estimate(values)

    def evaluate(self, context: dict[str, Any] | SharedContext) -> CelResult:
        """Evaluate with ``context`` within the budget; never raises."""
        if self.budget is not None and self.cost.loops:
            steps = self.estimate(context)
            if steps > self.budget:
                return CelResult(
                    error=f"{BUDGET_EXCEEDED}: about {steps:,} steps, over the budget of {self.budget:,} "
                    "(limits.cel_budget)",
                    over_budget=True,
                )
        try:
            return CelResult(self.program.execute(context.context if isinstance(context, SharedContext) else context))
        except KeyError as missing:  # one name per exception type: compiled, a name has one type
            return CelResult(error=f"no such key: {missing.args[0]!r}" if missing.args else "no such key")
        except BaseException as exc:
            if not isinstance(exc, Exception) and not _is_panic(exc):
                raise
            message = str(exc).split(". ")[0].strip() or type(exc).__name__
            return CelResult(error=message)

    def test(self, context: dict[str, Any] | SharedContext) -> CelResult:
        """Evaluate as a condition: the value must be a boolean, otherwise an error result."""
        result = self.evaluate(context)
        if result.error is None and not isinstance(result.value, bool):
            return CelResult(error=f"expression returned {type(result.value).__name__}, not bool")
        return result


class SharedContext:
    """Variables converted to CEL values once and shared by several evaluations.

    Converting a Python value to CEL costs O(its size) on every evaluation that receives it as a
    plain dict; a whole board is large, so the kernel converts ``root`` once per commit and only
    swaps the small per-node variables (``self``, ``oldSelf``) between evaluations.
    """

    def __init__(self, variables: dict[str, Any]) -> None:
        import cel  # lazily: the package's __init__ imports its REPL (prompt_toolkit, ~0.1 s)

        self.context = cel.Context(variables=variables)
        self.values = dict(variables)
        self._deep: dict[str, int] = {}

    def set(self, name: str, value: Any) -> None:
        """Bind (or rebind) one variable."""
        self.context.add_variable(name, value)
        self.values[name] = value
        self._deep.pop(name, None)

    def deep_max(self, name: str) -> int:
        """The longest collection inside variable ``name``, computed once per binding (the
        budget's estimate needs it; ``root`` is large and shared by many evaluations)."""
        if name not in self._deep:
            self._deep[name] = deep_collection_max(self.values[name])
        return self._deep[name]


def compile_cel(
    source: str, *, budget: int | None = DEFAULT_CEL_BUDGET, max_nesting: int = MAX_COMPREHENSION_NESTING
) -> CelExpr:
    """Compile a CEL expression whose evaluations are bounded by ``budget`` estimated steps
    (None: unbounded) and whose comprehensions nest at most ``max_nesting`` deep; raises
    CelCompileError with a one-line message."""
    if not isinstance(source, str) or not source.strip():
        raise CelCompileError("expression is empty")
    if len(source) > MAX_CEL_CHARS:
        raise CelCompileError(f"expression is {len(source)} characters long, over the limit of {MAX_CEL_CHARS}")
    nesting = comprehension_nesting(source)
    if nesting > max_nesting:
        raise CelCompileError(
            f"comprehensions (all/exists/map/filter) nest {nesting} deep, over the limit of {max_nesting}"
            " (limits.cel_nesting)"
        )
    import cel  # lazily, as in SharedContext

    try:
        program = cel.compile(source)
    except BaseException as exc:  # a Rust panic is a BaseException: never let it escape
        if not isinstance(exc, Exception) and not _is_panic(exc):
            raise
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        detail = next((ln for ln in lines if ln.startswith("ERROR")), lines[0] if lines else str(exc))
        raise detached(CelCompileError(detail.replace("ERROR: <input>:", "at "))) from None
    try:
        names = frozenset(program.variables())
    except Exception:
        names = _ALL
    return CelExpr(source, program, names, CostModel(source, nesting), budget)
