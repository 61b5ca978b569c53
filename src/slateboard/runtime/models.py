"""The model a serving process gives a board's LLM workers, from a model string.

Besides the providers of ``slateboard.models``, a serving process (runner process, Temporal
worker) resolves ``python:MODULE:NAME``: NAME is a Model, or a callable returning one (how tests
and benchmarks plug scripted models into real processes).
"""

from __future__ import annotations

import importlib
from typing import Any

from ..models import Model, resolve_model
from ..models.errors import ModelConfigError

__all__ = ["PYTHON_PREFIX", "resolve_runner_model"]

PYTHON_PREFIX = "python:"


def resolve_runner_model(spec: Model | str | None) -> Model | None:
    """The Model for a runner's model string: ``python:MODULE:NAME`` imports NAME from MODULE (a
    Model, or a zero-argument callable returning one); anything else goes to ``resolve_model``.
    None stays None (each worker's blueprint model, else ``local``). Raises ModelConfigError."""
    if spec is None or not isinstance(spec, str):
        return spec
    if not spec.startswith(PYTHON_PREFIX):
        return resolve_model(spec)
    ref = spec[len(PYTHON_PREFIX) :]
    module_name, sep, attr = ref.rpartition(":")
    if not sep or not module_name or not attr:
        raise ModelConfigError(spec, "expected python:MODULE:NAME (NAME a Model or a callable returning one)")
    try:
        found: Any = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ModelConfigError(spec, f"cannot import {ref}: {exc}") from None
    model = found() if callable(found) and not isinstance(found, Model) else found
    if not isinstance(model, Model):
        raise ModelConfigError(spec, f"{ref} gave a {type(model).__name__}, not a Model")
    return model
