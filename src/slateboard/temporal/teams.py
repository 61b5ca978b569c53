"""A team on the engine: the reference a worker rebuilds it from, and the digest it must match.

A ``Team`` cannot travel as data (its agents hold models, tools, approval callables), so a board
records a reference ``MODULE:NAME`` (``python:MODULE:NAME`` is taken too, as for models) naming
a ``Team``, or a zero-argument callable returning one; each process imports it from its own
``sys.path``. What a worker plays must be the team the board was made by: the digest of the
team's board blueprint, its problem left out, is recorded when the board is submitted and
checked by every worker.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from ..blueprint.compile import compile_blueprint
from ..errors import InvalidInput
from ..kernel.canonical import hash_json
from ..runtime.models import PYTHON_PREFIX
from ..team import Team

__all__ = ["TeamRefError", "import_team", "team_digest"]


class TeamRefError(InvalidInput):
    """A team reference that does not give a ``Team`` (one line: the reference and why)."""


def import_team(ref: str) -> Team:
    """The ``Team`` that ``ref`` (``MODULE:NAME``) names: NAME itself when it is a Team, else
    what calling it without arguments returns. TeamRefError naming ``ref`` when the module or
    the name cannot be imported, the call fails, or the result is not a Team."""
    if not isinstance(ref, str):
        raise TeamRefError(f"a team reference is a MODULE:NAME string, got {type(ref).__name__}")
    text = ref[len(PYTHON_PREFIX) :] if ref.startswith(PYTHON_PREFIX) else ref
    module_name, sep, attr = text.rpartition(":")
    if not sep or not module_name or not attr or any(c.isspace() for c in text):
        raise TeamRefError(f"team {ref!r}: expected MODULE:NAME (NAME a Team, or a callable returning one)")
    try:
        found: Any = getattr(importlib.import_module(module_name), attr)
    except Exception as exc:  # an import runs the module's code: any error is the reference's
        raise TeamRefError(f"team {ref!r}: cannot import {text}: {_one_line(exc)}") from None
    if not isinstance(found, Team) and callable(found) and not isinstance(found, type):
        try:
            found = found()
        except Exception as exc:
            raise TeamRefError(f"team {ref!r}: calling {text}() failed: {_one_line(exc)}") from None
    if not isinstance(found, Team):
        raise TeamRefError(f"team {ref!r} gave a {type(found).__name__}, not a Team (nor a callable returning one)")
    return found


def team_digest(spec: Mapping[str, Any]) -> str:
    """The digest of a team's board blueprint ``spec`` (``team.board_spec()``, or the one a
    board of the team stores) with its initial state left out: the same for every board of
    one team, whatever its problem, and different when the team's agents, instructions,
    limits, circuit or approval paths differ."""
    compiled = compile_blueprint(dict(spec)).spec.to_json()
    return hash_json({k: v for k, v in compiled.items() if k != "initial_state"})


def _one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
