"""Every exception slateboard raises, under one root.

Catch ``SlateboardError`` to catch anything slateboard raises on purpose; catch one of its three
branches to tell *who* must act. Each concrete class lives next to the code that raises it (the
module named in brackets) and keeps the standard base it had before (``ValueError``,
``TimeoutError``...), so ``except ValueError`` keeps working where it did::

    SlateboardError
    ├── UsageError                    the caller must fix code, configuration or input
    │   ├── BlueprintError            [blueprint]     a rejected blueprint, every issue by path
    │   ├── CelCompileError           [kernel.cel]    a CEL expression that does not compile
    │   ├── PointerError              [kernel.pointer] not a JSON Pointer / contract pattern
    │   ├── SchemaError               [kernel.schema] a state schema the kernel cannot use
    │   ├── CanonicalError            [kernel.canonical] a value with no canonical JSON form
    │   ├── JsonValueError            [kernel.jsonvalue] JSON over a limit or not JSON at all
    │   ├── OpError, ApplyError       [kernel.patch]  an RFC 6902 patch that is malformed / fails
    │   ├── KernelBusy                [kernel]        prepare/commit/abort called out of order
    │   ├── SchedulerBusy             [scheduling]    the same, for the scheduler's schedule
    │   ├── InvalidInput              [here]          an argument or value slateboard cannot use
    │   │   ├── ViewBudgetError       [views]         a view budget below the minimum
    │   │   └── StateModelMissing     [blueprint]     typed_state on a blueprint without schema=
    │   ├── UnknownName               [here]          a name that is not defined (also a KeyError)
    │   │   ├── UnknownWorker         [views]         a worker the blueprint does not have
    │   │   ├── UnknownTemplate       [blueprint.templates] no built-in blueprint of that name
    │   │   └── UnknownTenant         [stores.tenancy] a tenant the store's registry does not have
    │   ├── AnchorError               [kernel.anchor] an unusable anchor key or anchor file
    │   ├── WorkerConfigError         [workers]       a worker that cannot be built
    │   ├── ModelConfigError          [models]        a model unusable as configured (before any call)
    │   ├── ApprovalError             [runtime]       approving something that is not held
    │   ├── TextWorldMissing          [slateboard_eval.envs] the optional textworld package is absent
    │   ├── JvmMissing                [slateboard_eval.envs] a JVM suite's package or Java is absent
    │   │   └── ScienceWorldMissing, TwxMissing
    │   ├── FaultsError               [slateboard_eval] a fault-injection plan that is not valid
    │   └── CliError                  [cli]           a command-line failure (message + exit code)
    ├── RunError                      a run could not go on; the inputs were fine
    │   ├── ModelError                [models]        a model call failed (one line: model, cause)
    │   │   └── ModelUnavailable, ModelTimeout, ModelRateLimited, ModelServerError,
    │   │       ModelAuthError, ModelNotFound, ModelRequestError, ModelBadResponse, ModelScriptError
    │   ├── ArchitectError            [architect]     no acceptable blueprint after the repairs
    │   ├── RunnerError               [runtime]       a board run stopped on an inconsistency
    │   ├── WaitTimeout               [runtime]       waiting for a board to finish timed out
    │   ├── TextEnvironmentError      [envs]          a text environment failed
    │   └── ApiError                  [web]           a dashboard request that cannot be answered
    └── StoreError                    [here; stores]  persistence; driver errors are translated
        ├── Conflict                                  the board moved on (compare-and-set lost)
        │   └── DuplicateInvocationCommit
        ├── BoardNotFound, BoardExists, AgendaError, LeaseLost
        └── StoreCorrupt, StoreUnavailable, SchemaTooNew

No class sits in two branches. A model string, key or weights file that cannot be used is a
``ModelConfigError`` when it is found, before any call; once a call is under way every failure is
a ``ModelError`` (a key refused during a call is ``ModelAuthError``), which workers, agents and
the coordinator turn into a rejection at stage ``model`` instead of a crash.
The kernel never raises for a bad proposal: such faults become rejections naming their stage.
Where Python's own protocols call for them, the standard errors stay: ``KeyError`` for a missing
key or pointer (``Kernel.value_at``), ``TypeError`` for an argument of the wrong type.
A few private exceptions carry control flow inside one module and never escape it; they derive
from ``SlateboardError`` too, so that the rule "everything derives from the root" has no holes.

This module imports nothing from slateboard: every other module may import it.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["InvalidInput", "RunError", "SlateboardError", "StoreError", "UnknownName", "UsageError"]


class SlateboardError(Exception):
    """The root of every exception slateboard defines (see the module docstring for the tree)."""


class UsageError(SlateboardError):
    """Configuration or usage errors: a blueprint, model string, pointer, patch, argument or call
    order that is wrong. Retrying the same thing fails the same way; the caller must change it."""


class InvalidInput(UsageError, ValueError):
    """An argument or value slateboard cannot use (out of range, malformed record, unknown name).

    Also a ``ValueError``, so code written against the standard exception keeps working.
    """


class UnknownName(UsageError, KeyError):
    """A name slateboard does not know (a worker, a template); the message lists the known ones.

    Also a ``KeyError``, as a lookup by name is, so ``except KeyError`` keeps working; unlike a
    plain ``KeyError`` its text is the message itself, not the message's repr.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class RunError(SlateboardError):
    """Run errors: a model, worker, environment or runner failed while the inputs were valid.

    Some are transient (``ModelUnavailable``, ``ModelRateLimited``); retrying may succeed.
    """


class StoreError(SlateboardError):
    """Base of every error a store raises (driver errors are always translated)."""


_E = TypeVar("_E", bound=BaseException)


def detached(exc: _E) -> _E:
    """``exc``, marked not to show the exception being handled in its traceback.

    Written ``raise detached(X) from None``: the same as ``raise X from None`` in Python, and
    also in the modules mypyc compiles (``slateboard._native``), which ignore ``from``.
    """
    exc.__suppress_context__ = True
    return exc
