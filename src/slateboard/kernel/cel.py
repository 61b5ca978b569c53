"""CEL expressions: compiled once when a blueprint is accepted, evaluated deterministically.

slateboard uses the ``common-expression-language`` package (a Rust CEL implementation). An
expression that does not parse rejects the blueprint. Evaluation errors (a missing field, a
type mismatch) are reported as values, never raised, so the kernel stays total.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cel

from ..errors import UsageError

_ALL: frozenset[str] = frozenset({"\x00all"})


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
        except Exception as exc:
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
    try:
        program = cel.compile(source)
    except Exception as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        detail = next((ln for ln in lines if ln.startswith("ERROR")), lines[0] if lines else str(exc))
        raise CelCompileError(detail.replace("ERROR: <input>:", "at ")) from None
    try:
        names = frozenset(program.variables())
    except Exception:
        names = _ALL
    return CelExpr(source, program, names)
