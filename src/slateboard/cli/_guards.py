"""``replay --revalidate``'s audit of a board's function guards (``guards.rerun_function_guards``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..kernel.record import Record
from ..stores.base import LoadedBoard
from ._common import add_board_import_paths, run_async


def guard_disagreements(meta: Mapping[str, Any], loaded: LoadedBoard, records: list[Record]) -> list[str]:
    """One line per logged function verdict the function now contradicts (empty: none, or no
    function guards). The board's stored blueprint is compiled again; its functions import as
    when the board ran (``meta``: the board's, naming its blueprint's directory); judges are
    not called."""
    from ..blueprint.compile import compile_blueprint

    blueprint = compile_blueprint(loaded.blueprint, source_label=f"stored with board {loaded.board_id}")
    if not any(g.function is not None for g in blueprint.spec.guards):
        return []
    from ..guards import rerun_function_guards

    add_board_import_paths(meta)

    return run_async(lambda: rerun_function_guards(blueprint, loaded.initial_state, records))
