"""A typed Python front for blueprints: ``Board`` over a pydantic state model, typed contract
paths (``ref``), LLM and function workers, CEL rules. It produces the same ``Blueprint`` model
as YAML (see ``docs/python-builder.md`` and ``docs/first-team.md``)."""

from ._board import Board
from ._paths import ALL, APPEND, EACH, ref

__all__ = ["ALL", "APPEND", "EACH", "Board", "ref"]
