"""CEL expressions: compiled once when a blueprint is accepted, evaluated deterministically.

slateboard uses the ``common-expression-language`` package (a Rust CEL implementation). An
expression that does not parse rejects the blueprint. Evaluation errors (a missing field, a
type mismatch) are reported as values, never raised, so the kernel stays total.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import cel

from ..errors import UsageError

_ALL: frozenset[str] = frozenset({"\x00all"})

MAX_CEL_CHARS = 4096
"""Longest accepted expression. Far above any real rule, and far below the column (65,535)
past which the Rust parser panics while formatting a syntax error."""

MAX_COMPREHENSION_NESTING = 3
"""Deepest nesting of comprehension macros (``all``, ``exists``, ``exists_one``, ``map``,
``filter``) in one expression. Each level multiplies the evaluation cost by a collection's
size, and CEL evaluation has no step budget of its own: seven nested ``.all()`` cost seconds
per commit. A static bound keeps evaluation deterministic (a timeout would not replay)."""

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


@dataclass(frozen=True, slots=True)
class CelExpr:
    """A compiled CEL expression and the variable names it refers to."""

    source: str
    program: Any
    variables: frozenset[str]

    def uses(self, name: str) -> bool:
        """True when the expression may mention variable ``name`` (so callers may skip costly ones).

        When the variable list could not be read, every name counts as used (safe default).
        """
        return self.variables is _ALL or name in self.variables

    def evaluate(self, context: dict[str, Any] | SharedContext) -> CelResult:
        """Evaluate with ``context``; never raises."""
        try:
            return CelResult(self.program.execute(context.context if isinstance(context, SharedContext) else context))
        except KeyError as exc:
            return CelResult(error=f"no such key: {exc.args[0]!r}" if exc.args else "no such key")
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
        self.context = cel.Context(variables=variables)

    def set(self, name: str, value: Any) -> None:
        """Bind (or rebind) one variable."""
        self.context.add_variable(name, value)


def compile_cel(source: str) -> CelExpr:
    """Compile a CEL expression; raises CelCompileError with a one-line message."""
    if not isinstance(source, str) or not source.strip():
        raise CelCompileError("expression is empty")
    if len(source) > MAX_CEL_CHARS:
        raise CelCompileError(f"expression is {len(source)} characters long, over the limit of {MAX_CEL_CHARS}")
    nesting = comprehension_nesting(source)
    if nesting > MAX_COMPREHENSION_NESTING:
        raise CelCompileError(
            f"comprehensions (all/exists/map/filter) nest {nesting} deep, over the limit of {MAX_COMPREHENSION_NESTING}"
        )
    try:
        program = cel.compile(source)
    except BaseException as exc:  # a Rust panic is a BaseException: never let it escape
        if not isinstance(exc, Exception) and not _is_panic(exc):
            raise
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        detail = next((ln for ln in lines if ln.startswith("ERROR")), lines[0] if lines else str(exc))
        raise CelCompileError(detail.replace("ERROR: <input>:", "at ")) from None
    try:
        names = frozenset(program.variables())
    except Exception:
        names = _ALL
    return CelExpr(source, program, names)
