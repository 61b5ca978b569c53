"""``slateboard serve``: the web dashboard."""

from __future__ import annotations

import typer

from ._errors import not_supported


def serve_command(ctx: typer.Context) -> None:
    """Serve the web dashboard (not supported yet)."""
    raise not_supported("the dashboard (slateboard serve)", "inspect boards with slateboard boards/log/show instead")
