"""A worker's model string, checked when the blueprint is accepted (its form only).

``llm_worker(..., model="gpt4o")`` or ``model: gpt4o`` in YAML is a blueprint issue at
``/workers/<name>/model`` listing the accepted forms, not an error when the run starts: the
registry's own parsing (``models.registry.check_model_string``) decides, without a key, a
weights file or the network, so the same blueprint checks the same on every machine.
"""

from __future__ import annotations

__all__ = ["bad_model_string"]


def bad_model_string(model: str) -> str | None:
    """Why ``model`` names no model slateboard can resolve (its form), or None when it can."""
    # The providers load only when a blueprint names a model.
    from ..models.errors import ModelConfigError
    from ..models.registry import check_model_string
    from ..redaction import redact

    try:
        check_model_string(model)
    except ModelConfigError as exc:
        return redact(str(exc))
    return None
