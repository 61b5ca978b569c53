"""The evaluation commands of ``slateboard``: ``slateboard eval ...`` and ``slateboard faults``.

``register`` is the ``slateboard.cli`` entry point of slateboard-eval: the core CLI calls it with a
Typer app on the first command it does not know (see ``slateboard.cli._plugins``).
"""

from __future__ import annotations

import typer

from ._eval import eval_app
from ._faults import faults_command

__all__ = ["eval_app", "faults_command", "register"]


def register(app: typer.Typer) -> None:
    """Add ``eval`` (the evaluation suites) and ``faults`` (the fault-injection suite) to ``app``."""
    app.add_typer(eval_app, name="eval")
    app.command("faults")(faults_command)
