"""Built-in blueprint templates, shipped as YAML files in ``slateboard/blueprint/templates/``.

* ``investigation``: hypotheses, evidence per hypothesis, a critic, a decider writing ``/answer``;
  support and refutation are gated on evidence (or critiques) present on the board.
* ``claim_verification``: claims extracted from a document, evidence per claim, a verifier, a
  reporter; a claim's status may only become ``verified`` when it links supporting evidence that
  exists on the board (an invariant), and a settled status is final.
* ``text_actor``: planner, actor, executor (a function issuing a fresh plan's admissible first
  step without a model call), advance (a function taking each command's steps off the plan, so
  the plan holds the steps still to take), environment (a Python function in practice) and
  verifier for text environments (ALFWorld-style), with command/observation turn-taking as
  invariants.

Every template compiles, starts from a ``start`` rule, has a ``done`` condition and an ``answer``
pointer. ``load_template(name)`` returns a fresh CompiledBlueprint each call (Python invariants
registered on one do not leak into another).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from ..errors import UnknownName
from .compile import BlueprintError, BlueprintIssue, CompiledBlueprint, compile_blueprint
from .loading import parse_blueprint_text

__all__ = ["UnknownTemplate", "list_templates", "load_template", "template_spec", "template_text"]


class UnknownTemplate(UnknownName):
    """No built-in blueprint has that name (the message lists the ones there are)."""


_SUFFIX = ".yaml"


def _directory() -> Any:
    return resources.files(__package__ or "slateboard.blueprint") / "templates"


def list_templates() -> list[str]:
    """The names of the built-in templates, sorted."""
    return sorted(
        entry.name[: -len(_SUFFIX)]
        for entry in _directory().iterdir()
        if entry.is_file() and entry.name.endswith(_SUFFIX)
    )


def template_text(name: str) -> str:
    """The YAML text of template ``name``; UnknownTemplate (a KeyError naming the available
    ones) when unknown."""
    if name not in list_templates():
        raise UnknownTemplate(f"unknown template {name!r} (templates: {', '.join(list_templates())})")
    text: str = (_directory() / f"{name}{_SUFFIX}").read_text(encoding="utf-8")
    return text


def template_spec(name: str) -> dict[str, Any]:
    """The template's blueprint as plain JSON data (a fresh copy each call)."""
    data = parse_blueprint_text(template_text(name))
    if not isinstance(data, dict):
        raise BlueprintError([BlueprintIssue("", "a template must be a YAML mapping")], f"template {name}")
    return data


def load_template(name: str) -> CompiledBlueprint:
    """Template ``name`` compiled and accepted (UnknownTemplate, a KeyError, for an unknown name; BlueprintError
    listing every issue if a template were broken)."""
    return compile_blueprint(template_spec(name), source_label=f"template {name}")
