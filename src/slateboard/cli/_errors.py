"""How the CLI fails: one clear line on stderr (plus a list where one helps) and an exit code.

Every command raises ``CliError`` for problems it finds itself; library errors (blueprint,
store, model, worker, runner) are translated by ``describe``. Without ``--debug`` no traceback
is ever printed; with it the traceback comes first, then the same line.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import UsageError
from ..redaction import redact

EXIT_OK = 0
EXIT_ERROR = 1
"""Something failed: a missing file, a rejected blueprint, an unknown board, a store or model error."""
EXIT_USAGE = 2
"""Bad arguments (a model string that cannot be used among them: ``ModelConfigError``), or a
command that is not supported yet."""
EXIT_VERIFY_FAILED = 3
"""``slateboard replay --verify``: the log does not verify."""
EXIT_INTERRUPTED = 130


@dataclass
class Settings:
    """Process-wide CLI settings, reset at every invocation."""

    debug: bool = False
    tenant: str | None = None
    """``--tenant`` as given on the command line (wherever it stands); None: $SLATEBOARD_TENANT."""


settings = Settings()


class CliError(UsageError):
    """A failure the CLI reports as one line (``message``), optional ``details`` lines, and ``code``."""

    def __init__(self, message: str, *, code: int = EXIT_ERROR, details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.details = list(details)


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) collapsed to one space."""
    return " ".join(str(text).split())


def describe(exc: BaseException) -> CliError:
    """The CliError to report for any exception (library errors get a clear prefix)."""
    from ..blueprint.compile import BlueprintError
    from ..models.errors import ModelConfigError, ModelError
    from ..runtime.boards import BoardBusy
    from ..runtime.runner import RunnerError
    from ..stores.base import BoardNotFound, Conflict, LeaseLost, StoreCorrupt, StoreError, StoreUnavailable
    from ..workers.base import WorkerConfigError

    if isinstance(exc, CliError):
        return exc
    if isinstance(exc, BlueprintError):
        n = len(exc.issues)
        head = f"blueprint {exc.source} rejected" if exc.source else "blueprint rejected"
        return CliError(
            f"{head} ({n} issue{'s' if n != 1 else ''}):",
            details=[f"  - {one_line(str(issue))}" for issue in exc.issues],
        )
    if isinstance(exc, BoardNotFound):
        return CliError(one_line(str(exc)))
    if isinstance(exc, StoreCorrupt):
        return CliError(f"the store is damaged: {one_line(str(exc))}")
    if isinstance(exc, StoreUnavailable):
        return CliError(f"the store cannot be opened: {one_line(str(exc))}")
    if isinstance(exc, (Conflict, LeaseLost)):
        # Another run/resume appended to the board meanwhile (D13): that is a busy board, not
        # a broken store.
        return CliError(
            f"the board is busy: another run or resume is working on it ({one_line(str(exc))});"
            " wait for it to end, then resume"
        )
    if isinstance(exc, BoardBusy):
        # A second runner found the board's next step leased by a live run (D13 at its root).
        return CliError(f"the board is busy: {one_line(str(exc))}")
    if isinstance(exc, StoreError):
        return CliError(f"store error: {one_line(str(exc))}")
    if isinstance(exc, ModelConfigError):
        return CliError(f"model configuration: {one_line(str(exc))}", code=EXIT_USAGE)
    if isinstance(exc, ModelError):
        return CliError(f"model error: {one_line(str(exc))}")
    if isinstance(exc, WorkerConfigError):
        return CliError(f"worker configuration: {one_line(str(exc))}")
    if isinstance(exc, RunnerError):
        return CliError(f"the run failed: {one_line(str(exc))}")
    if isinstance(exc, KeyboardInterrupt):
        return CliError("interrupted", code=EXIT_INTERRUPTED)
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return CliError(f"{one_line(exc.strerror or str(exc))}{where}")
    name = type(exc).__name__
    return CliError(f"internal error: {name}: {one_line(str(exc))} (run with --debug for the traceback)")


def report(exc: BaseException) -> int:
    """Print ``exc`` to stderr (with its traceback under ``--debug``) and return the exit code."""
    err = describe(exc)
    if settings.debug:
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    # the one redaction at the CLI's boundary: no store password or API key in an error line
    sys.stderr.write(f"error: {redact(err.message)}\n")
    for line in err.details:
        sys.stderr.write(f"{redact(line)}\n")
    sys.stderr.flush()
    return err.code
