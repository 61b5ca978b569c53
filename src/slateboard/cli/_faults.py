"""``slateboard faults``: the fault-injection suite side by side with peers."""

from __future__ import annotations

import typer

from ._errors import not_supported


def faults_command(ctx: typer.Context) -> None:
    """Run the fault-injection suite (not supported yet)."""
    raise not_supported("fault injection (slateboard faults)")
