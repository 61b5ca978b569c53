"""A model judge: one model call whose typed reply (``ok``, ``reason``, ...) is a guard's verdict.

The judge is shown its instruction, the proposing worker's name, the patch and the values of its
``context`` pointers in the state after the patch; nothing else of the board. Its reply is decoded
against the verdict type (constrained where the provider can), and a reply that does not fit is a
failed verdict (``error``), never a guess. The call goes through the spend hook like every LLM
worker's call (``workers.llm.guarded_call``), and its usage is logged in the verdict so the
board's accounts count its tokens and cost.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..blueprint.models import GuardSpec
from ..kernel.canonical import JSON, canonical_str
from ..kernel.pointer import MISSING, parse_pointer, resolve
from ..models import Message, Model, ModelError
from ..redaction import redact
from ..workers.base import generation_usage
from ..workers.llm import SpendHook, guarded_call
from ..workers.parse import parse_value

__all__ = ["Judge", "verdict_schema"]

_JSON_TYPES = {"bool": "boolean", "str": "string", "int": "integer", "float": "number"}
REASON_LIMIT = 2000
"""Characters of a guard's reason kept in the record."""


def verdict_schema(verdict: dict[str, str]) -> dict[str, Any]:
    """The JSON Schema of a verdict type (every field required, no other field)."""
    return {
        "type": "object",
        "properties": {k: {"type": _JSON_TYPES[t]} for k, t in verdict.items()},
        "required": list(verdict),
        "additionalProperties": False,
    }


def _fits(value: object, kind: str) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def unfit(reply: JSON, verdict: dict[str, str]) -> str | None:
    """Why ``reply`` does not fit the verdict type, or None."""
    if not isinstance(reply, dict):
        return f"expected a JSON object with {', '.join(verdict)}, got {type(reply).__name__}"
    missing = [k for k in verdict if k not in reply]
    extra = sorted(k for k in reply if k not in verdict)
    wrong = [f"{k} is not {t}" for k, t in verdict.items() if k in reply and not _fits(reply[k], t)]
    faults = ([f"missing {', '.join(missing)}"] if missing else []) + (
        [f"unexpected {', '.join(extra)}"] if extra else []
    )
    faults += wrong
    return "; ".join(faults) or None


class Judge:
    """Guard ``spec`` (a model judge) on ``model``. ``spend`` (set by the board's session) is the
    hook each call reserves against; None: no spend cap."""

    def __init__(self, spec: GuardSpec, model: Model) -> None:
        self.spec = spec
        self.model = model
        self.schema = verdict_schema(dict(spec.verdict))
        self.spend: SpendHook | None = None

    def messages(self, worker: str, after: JSON, patch: JSON) -> list[Message]:
        """The judge's prompt: its instruction, the reply shape, the patch and its context."""
        fields = ", ".join(f"{k}: {t}" for k, t in self.spec.verdict.items())
        system = (
            f"{self.spec.instruction.strip()}\n\nYou check one patch (RFC 6902) proposed by worker {worker!r}. "
            f"Reply with one JSON object {{{fields}}}; ok is true when the patch passes."
        )
        lines = [f"Patch: {canonical_str(patch)}"]
        for pointer in self.spec.context:
            node = resolve(after, parse_pointer(pointer))
            shown = "(absent)" if node is MISSING else canonical_str(node)
            lines.append(f"State after the patch at {pointer or '/'}: {shown}")
        return [Message.system(system), Message.user("\n".join(lines))]

    async def check(self, worker: str, after: JSON, patch: JSON) -> dict[str, JSON]:
        """The verdict (see ``kernel.guardstage``): the reply's fields as ``verdict``, its ``ok``
        and ``reason``, the model and the call's usage; a failed call or an unfit reply is a
        refusal with ``error`` set."""
        spec = self.spec
        out: dict[str, JSON] = {"name": spec.name, "by": "model", "model": self.model.name}
        messages = self.messages(worker, after, patch)
        try:
            async with asyncio.timeout(spec.timeout):
                gen, _settled = await guarded_call(
                    self.spend,
                    self.model.name,
                    messages,
                    spec.max_tokens,
                    lambda: self.model.generate(
                        messages, json_schema=self.schema, max_tokens=spec.max_tokens, temperature=0.0
                    ),
                )
        except TimeoutError:
            return {**out, "ok": False, "error": "timeout", "reason": f"judge timed out after {spec.timeout:g} s"}
        except ModelError as exc:
            why = redact(str(exc))[:REASON_LIMIT]
            return {**out, "ok": False, "error": "model", "reason": f"judge call failed: {why}"}
        out["usage"] = generation_usage(gen, f"guard:{spec.name}").to_json()
        reply = parse_value(gen.text)
        fault = unfit(reply, dict(spec.verdict))
        if fault is not None or not isinstance(reply, dict):
            text = gen.text[:200]
            return {
                **out,
                "ok": False,
                "error": "verdict",
                "reason": f"judge reply does not fit its verdict type: {fault} (reply: {text!r})",
            }
        reason = reply.get("reason")
        out.update(ok=reply["ok"], verdict=reply, reason=(reason if isinstance(reason, str) else "")[:REASON_LIMIT])
        return out
