"""The ``slateboard`` command line: run boards, read their logs, replay and verify them.

``main`` is the console-script entry point; ``app`` is the Typer app (for ``typer.testing``).
Every failure is one line on stderr and a non-zero exit code (``--debug`` adds the traceback):
1 for errors, 2 for bad arguments and commands not supported yet, 3 when ``replay --verify``
finds a record that does not match, 130 when interrupted.
"""

from ._app import app, main
from ._errors import EXIT_ERROR, EXIT_USAGE, CliError

__all__ = [
    "EXIT_ERROR",
    "EXIT_USAGE",
    "CliError",
    "app",
    "main",
]
