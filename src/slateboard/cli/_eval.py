"""``slateboard eval ...``: evaluation suites (the TextWorld text-game suite)."""

from __future__ import annotations

import typer

from ._errors import not_supported

eval_app = typer.Typer(help="Evaluation suites.", no_args_is_help=True)


@eval_app.command("textworld")
def textworld_command(ctx: typer.Context) -> None:
    """Run the TextWorld text-game suite (not supported yet)."""
    raise not_supported("the TextWorld suite (slateboard eval textworld)")
