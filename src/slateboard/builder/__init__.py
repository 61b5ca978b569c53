"""A typed Python front for blueprints: ``Board`` over a pydantic state model, typed contract
paths (``ref``), LLM and function workers, CEL rules, joins (``part``) and batches. It produces
the same ``Blueprint`` model as YAML (see ``docs/python-builder.md``, ``docs/first-team.md`` and
``docs/composing.md``)."""

from ._board import Board, part
from ._paths import ALL, APPEND, EACH, ref

__all__ = ["ALL", "APPEND", "EACH", "Board", "part", "ref"]
