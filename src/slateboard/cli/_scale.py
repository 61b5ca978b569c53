"""``slateboard worker``, ``submit`` and ``wait``: runner processes sharing boards through PostgreSQL."""

from __future__ import annotations

import typer

from ._errors import not_supported


def worker_command(ctx: typer.Context) -> None:
    """Run a long-lived runner process (not supported yet)."""
    raise not_supported("runner processes (slateboard worker)")


def submit_command(ctx: typer.Context) -> None:
    """Create a board for runner processes (not supported yet)."""
    raise not_supported("slateboard submit")


def wait_command(ctx: typer.Context) -> None:
    """Follow a board to its end (not supported yet)."""
    raise not_supported("slateboard wait")
