"""``replay --revalidate``: run a stored board's function guards again and say where they now
disagree with the verdicts in its log.

The log's verdicts stay what decided the board (replay re-uses them); this is an audit of the
functions themselves, e.g. after their code changed. Model judges are never called again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson

from ..blueprint.compile import BlueprintError, CompiledBlueprint
from ..kernel.canonical import JSON
from ..kernel.guardstage import GUARDS_META
from ..kernel.patch import ApplyError, OpError, apply_ops, check_ops
from ..kernel.record import PROPOSAL_KIND, Record
from ..vocabulary import OUTCOME_ACCEPTED
from ._run import FunctionGuard, build_guards

__all__ = ["rerun_function_guards"]


async def rerun_function_guards(
    blueprint: CompiledBlueprint,
    initial_state: JSON,
    records: Iterable[Record],
    *,
    functions: Mapping[str, Callable[..., Any]] | None = None,
) -> list[str]:
    """One line per logged function verdict whose guard now decides otherwise (``ok`` differs),
    or that cannot be re-run (its function no longer imports: one line for the board). Empty:
    every function agrees with the log. Call it on a log that replays (``verify_board``)."""
    if not any(g.function is not None for g in blueprint.spec.guards):
        return []
    try:
        built = build_guards(blueprint, functions=functions, judges=False)
    except BlueprintError as exc:
        return [f"function guards cannot be re-run: {exc}"]
    guards = {g.spec.name: g for g in (built.guards if built else []) if isinstance(g, FunctionGuard)}
    out: list[str] = []
    state: JSON = orjson.loads(orjson.dumps(initial_state))
    for rec in records:
        verdicts = rec.meta.get(GUARDS_META) if rec.kind == PROPOSAL_KIND else None
        if isinstance(verdicts, list) and rec.worker is not None:
            for v in verdicts:
                guard = guards.get(v.get("name")) if isinstance(v, dict) else None  # type: ignore[arg-type]
                if guard is None or not isinstance(v, dict) or v.get("by") != "function":
                    continue
                ops = orjson.loads(rec.patch or "[]")
                after = _applied(state, ops)
                if after is None:
                    out.append(f"record {rec.seq}: guard {guard.spec.name!r}: the logged patch no longer applies")
                    continue
                again = await guard.check(rec.worker, orjson.loads(orjson.dumps(state)), after, ops)
                if again.get("ok") != v.get("ok"):
                    out.append(
                        f"record {rec.seq}: guard {guard.spec.name!r} logged ok={v.get('ok')}, now says "
                        f"ok={again.get('ok')} ({again.get('reason') or 'no reason'})"
                    )
        if rec.outcome == OUTCOME_ACCEPTED and rec.patch is not None:
            try:  # in place: the state is this function's own copy
                state = apply_ops(state, check_ops(orjson.loads(rec.patch))).root
            except (OpError, ApplyError, TypeError, ValueError):
                out.append(f"record {rec.seq}: the accepted patch does not apply; stopped here")
                break
    return out


def _applied(state: JSON, patch: Any) -> JSON | None:
    """A copy of ``state`` with ``patch`` applied, or None when it does not apply."""
    try:
        return apply_ops(orjson.loads(orjson.dumps(state)), check_ops(patch)).root
    except (OpError, ApplyError, TypeError, ValueError):
        return None
