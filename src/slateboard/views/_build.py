"""The view builder: read region -> bounded, hashed View (see slateboard.views)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from ..kernel.canonical import JSON, canonical_bytes, canonical_str, sha256_hex
from ..kernel.pointer import PointerError, escape_token, is_array_index, parse_pointer
from ..kernel.record import Record
from ..kernel.schema import pattern_locations
from ..kernel.visibility import Visibility
from ..vocabulary import OUTCOME_REJECTED
from ._cache import ViewCache, _Scope
from ._costs import FillMemo
from ._errors import UnknownWorker as UnknownWorker
from ._errors import ViewBudgetError as ViewBudgetError
from ._fill import Fill
from ._measure import Meter, clip_json, clip_str, json_size, shorten
from ._model import Handle, View
from ._order import Targets
from ._quarantine import quarantine_hidden, readable_state
from ._region import RNode, find, region_root, release

if TYPE_CHECKING:
    from ..kernel.contract import WorkerContract
    from ..kernel.kernel import Kernel
    from ..kernel.protocol import KernelBlueprint


MIN_BUDGET = 2
"""The smallest budget a view can honour: the empty object ``{}``."""

MAX_EXPAND = 16
"""At most this many handles are served from one expansion request."""

MAX_REJECTIONS = 3
"""At most this many recent rejections are shown, newest first."""

EVENT_KEYS = frozenset({"op", "path", "from", "version", "kind", "appended", "rule"})
"""The members of an event object a worker is shown (an event never carries state content)."""

_STRICT = False  # tests set this to assert that the size accounting is exact

_RANGE = re.compile(r"\[(\d{1,9}):(\d{1,9})\]")


# -- degradation levels ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Level:
    rejections: int
    reason: int
    patch: int
    schema: int | None
    event: int | None
    summary: int
    notes: bool
    writable: bool
    share: float


_LEVELS = (
    _Level(MAX_REJECTIONS, 400, 400, 1500, 600, 120, True, True, 0.5),
    _Level(1, 300, 200, 600, 300, 80, True, True, 0.5),
    _Level(1, 160, 80, 240, 160, 48, True, True, 0.6),
    _Level(1, 80, 0, 80, 80, 24, True, True, 0.75),
    _Level(1, 60, 0, None, 60, 16, True, True, 1.0),
    _Level(0, 0, 0, None, 40, 0, False, True, 1.0),
    _Level(0, 0, 0, None, None, 0, False, False, 1.0),
)


# -- expansion requests --------------------------------------------------------------------
def parse_expand_request(reply: JSON) -> tuple[str, ...]:
    """The handles a worker asked to see, from its reply's ``"expand"`` member.

    ``reply`` is the worker's decoded reply (or its JSON text). Only an object reply with an
    ``expand`` member counts; the member is a list of handle strings (a single string is taken
    as a list of one). Non-string entries are dropped, duplicates removed keeping the first,
    and at most MAX_EXPAND handles are kept. Never raises: anything else yields ``()``.
    """
    if isinstance(reply, (str, bytes, bytearray)):
        try:
            reply = orjson.loads(reply)
        except orjson.JSONDecodeError:
            return ()
    if not isinstance(reply, dict):
        return ()
    raw = reply.get("expand")
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        return ()
    out: list[str] = []
    for item in raw:
        if isinstance(item, str) and item not in out and len(item) <= 4096:
            out.append(item)
        if len(out) >= MAX_EXPAND:
            break
    return tuple(out)


def _resolve_handle(root: RNode | None, text: str) -> RNode | tuple[RNode, int, int] | None:
    i = text.find("#")
    while i >= 0:
        try:
            tokens = parse_pointer(text[:i])
        except PointerError:
            tokens = None
        coll = find(root, tokens) if tokens is not None else None
        if coll is not None and coll.container:
            ident = text[i + 1 :]
            m = _RANGE.fullmatch(ident)
            if m is not None:
                n = coll.count()
                a, b = min(int(m.group(1)), n), min(int(m.group(2)), n)
                if a < b:
                    return coll, a, b
            member = coll.find_member(ident)
            if member is not None:
                return member
        i = text.find("#", i + 1)
    return None


def _quote(text: str) -> str:
    return orjson.dumps(shorten(text, 80)).decode("utf-8")


def _targets(root: RNode | None, expand: Sequence[str], event: JSON, recent: Sequence[str]) -> Targets:
    t = Targets()
    seen: list[str] = []
    for h in expand:
        if not isinstance(h, str) or h in seen:
            continue
        seen.append(h)
        if len(seen) > MAX_EXPAND:
            t.notes.append(f"expand: only the first {MAX_EXPAND} handles are served")
            break
        hit = _resolve_handle(root, h)
        if hit is None:
            t.notes.append(f"expand {_quote(h)} ignored: no such handle inside the read contract")
        elif isinstance(hit, tuple):
            t.ranges.append(hit)
        else:
            t.items.append(hit)
    pointers = list(recent)
    if isinstance(event, dict) and isinstance(event.get("path"), str):
        pointers.insert(0, event["path"])
    for p in pointers:
        try:
            t.soft.append(parse_pointer(p))
        except PointerError:
            continue
    return t


# -- the frame: everything but data and handles ---------------------------------------------
def _writable(bp: KernelBlueprint, contract: WorkerContract) -> list[tuple[str, list[str], JSON]]:
    out = []
    for p in contract.writes:
        ops = sorted(contract.ops)
        if p.tokens and p.tokens[-1] == "-":
            ops = [o for o in ops if o in ("add", "copy", "move")]
        frags: list[JSON] = []
        seen: set[str] = set()
        for loc in pattern_locations(bp.schema, p.tokens):
            frag: JSON = True if loc.any else loc.schema
            key = canonical_str(frag)
            if key not in seen:
                seen.add(key)
                frags.append(frag)
        schema: JSON = False if not frags else frags[0] if len(frags) == 1 else {"anyOf": frags}
        out.append((p.text, ops, schema))
    return out


_Writable = list[tuple[str, list[str], JSON]]
_WRITABLE: dict[tuple[int, int], tuple[object, object, _Writable]] = {}
_WRITABLE_MAX = 256


def _writable_of(bp: KernelBlueprint, contract: WorkerContract) -> _Writable:
    """_writable(bp, contract), remembered per contract and schema object.

    It depends only on the two (both fixed once compiled) and took about a tenth of a build on a
    large board (issue 14). Keys are identities, checked against the strong references the entry
    holds, so a key can never be reused by another object while its entry lives; the table is
    emptied when full, which bounds it. Callers only read the list.
    """
    schema = bp.schema
    key = (id(contract), id(schema))
    hit = _WRITABLE.get(key)
    if hit is not None and hit[0] is contract and hit[1] is schema:
        return hit[2]
    out = _writable(bp, contract)
    if len(_WRITABLE) >= _WRITABLE_MAX:
        _WRITABLE.clear()
    _WRITABLE[key] = (contract, schema, out)
    return out


def _event_shown(event: JSON) -> JSON:
    if isinstance(event, dict):
        return {k: v for k, v in event.items() if k in EVENT_KEYS and not isinstance(v, (dict, list))}
    return event


def _frame(
    level: _Level,
    writable: list[tuple[str, list[str], JSON]],
    event: JSON,
    rejections: list[Record],
    notes: list[str],
) -> dict[str, JSON]:
    frame: dict[str, JSON] = {"data": {}}
    if event is not None and level.event is not None:
        shown = clip_json(event, level.event)
        if shown is not None:
            frame["event"] = shown
    rows: list[JSON] = []
    for rec in rejections[: level.rejections]:
        row: dict[str, JSON] = {"stage": rec.stage}
        if rec.reason is not None and (reason := clip_str(rec.reason, level.reason)) is not None:
            row["reason"] = reason
        if rec.patch is not None and level.patch > 0 and (patch := clip_str(rec.patch, level.patch)) is not None:
            row["patch"] = patch
        rows.append(row)
    if rows:
        frame["rejections"] = rows
    if level.notes and notes:
        frame["notes"] = list(notes)
    if level.writable and writable:
        entries: list[JSON] = []
        for path, ops, schema in writable:
            entry: dict[str, JSON] = {"path": path, "ops": ops}
            if level.schema is not None and (shown := clip_json(schema, level.schema)) is not None:
                entry["schema"] = shown
            entries.append(entry)
        frame["writable"] = entries
    return frame


# -- entry points -------------------------------------------------------------------------------
def build_view(
    blueprint: KernelBlueprint,
    worker_name: str,
    state: JSON,
    version: int,
    *,
    event: JSON = None,
    rejections: Iterable[Record] = (),
    expand: Sequence[str] = (),
    budget: int | None = None,
    recent: Sequence[str] = (),
    cache: ViewCache | None = None,
) -> View:
    """Build the bounded view of ``state`` (at ``version``) for worker ``worker_name``.

    Pure and deterministic: the result depends only on the arguments' JSON values (never on
    dict insertion order, a clock or randomness). ``budget`` overrides the worker's
    ``view_budget`` (e.g. a circuit "tighten" action); it must be at least MIN_BUDGET.
    ``rejections`` may hold any records: only this worker's rejected proposals are shown, newest
    (highest ``seq``) first. ``expand`` lists handles to page in (see parse_expand_request);
    ``recent`` lists pointers of recently changed nodes, shown with priority like the node of
    the triggering ``event``. The quarantine region is never shown unless the worker's read
    contract names it (``readable_state``). Raises UnknownWorker (a KeyError) for an unknown
    worker, ViewBudgetError (a ValueError) for a budget below MIN_BUDGET. See slateboard.views
    for the view's shape and the guarantees.

    ``cache`` (a ViewCache kept by the caller for this board, told of every committed change)
    lets consecutive builds reuse measured sizes, names and handles; the view is byte-identical
    to the one built without it.
    """
    contract = blueprint.workers.get(worker_name)
    if contract is None:
        raise UnknownWorker(
            f"unknown worker {worker_name!r} (workers: {', '.join(sorted(blueprint.workers)) or 'none'})"
        )
    # Read isolation: the quarantine region is cut out unless the contract names it (issue 18).
    state = readable_state(blueprint, worker_name, state)
    event, recent = _visible_event(blueprint, worker_name, state, event, recent)
    limit = contract.spec.view_budget if budget is None else budget
    if not isinstance(limit, int) or limit < MIN_BUDGET:
        raise ViewBudgetError(f"view budget must be an integer of at least {MIN_BUDGET} characters, got {limit!r}")
    pinned, windows = contract.spec.pinned, contract.spec.windows
    budgeted = [p for p in contract.reads if p.text not in pinned and p.text not in windows]
    root = region_root(state, budgeted) if (pinned or windows) else region_root(state, contract.reads)
    fixed_data, fixed_handles = _fixed(state, contract.reads, pinned, windows)
    targets = _targets(root, expand, event, recent)
    writable = _writable_of(blueprint, contract)
    recs = sorted(
        (r for r in rejections if r.worker == worker_name and r.outcome == OUTCOME_REJECTED),
        key=lambda r: r.seq,
        reverse=True,
    )[:MAX_REJECTIONS]
    shown_event = _event_shown(event)
    meter = Meter(64 * limit + 200_000)
    memo = FillMemo()
    if cache is not None and _cacheable(blueprint, worker_name):
        scope = cache.scope(worker_name, contract, limit, version)
        scope.prune()
    else:
        scope = _Scope(contract, limit)
    try:
        frame = (writable, shown_event, recs)
        view = _fill(root, meter, limit, targets, blueprint, memo, scope, frame, fixed_data, fixed_handles)
    finally:
        # Break the region tree's and the meter's reference cycles so that reference counting
        # frees them now rather than a later full collection (issue 14).
        release(root)
        meter.hints.clear()
        meter.walks.clear()
    if view is not None:
        index, text, raw, handles = view
        return _view(contract.name, version, limit, index, text, raw, handles)
    bare: dict[str, JSON] = {"data": dict(fixed_data)}
    if fixed_handles:
        bare["handles"] = [h.to_json() for h in fixed_handles]
    text = canonical_str(bare) if (fixed_data or fixed_handles) else '{"data":{}}' if limit >= 11 else "{}"
    return _view(contract.name, version, limit, len(_LEVELS), text, text.encode("utf-8"), list(fixed_handles))


def _visible_event(
    blueprint: KernelBlueprint, worker: str, state: JSON, event: JSON, recent: Sequence[str]
) -> tuple[JSON, Sequence[str]]:
    """The event and recent pointers without those inside an entry ``worker`` may not see (its
    path or ``from`` in an entry absent from the cut ``state``: hidden, or removed, whoever saw it)."""
    vis = getattr(blueprint, "visibility", None)
    if not isinstance(vis, Visibility):
        return event, recent

    def shown(pointer: object) -> bool:
        try:
            return vis.shown(state, worker, parse_pointer(pointer))
        except PointerError:
            return True  # not a pointer: names nothing

    if isinstance(event, dict) and not all(shown(event[k]) for k in ("path", "from") if k in event):
        event = None
    return event, [p for p in recent if shown(p)]


def _fill(
    root: RNode | None,
    meter: Meter,
    limit: int,
    targets: Targets,
    blueprint: KernelBlueprint,
    memo: FillMemo,
    scope: _Scope,
    frame_of: tuple[_Writable, JSON, list[Record]],
    fixed_data: dict[str, JSON],
    fixed_handles: list[Handle],
) -> tuple[int, str, bytes, list[Handle]] | None:
    """The first degradation level whose frame and fill fit: (level, text, UTF-8 text, handles),
    or None when none does. ``frame_of`` holds _frame's arguments besides the level and notes."""
    for index, level in enumerate(_LEVELS):
        frame = _frame(level, *frame_of, targets.notes)
        base = json_size(frame)
        if base > limit or (base > level.share * limit and index < len(_LEVELS) - 1):
            continue
        fill = Fill(root, meter, limit, base, level.summary, targets, blueprint, memo, scope)
        try:
            fitted = fill.run()
            if fitted:
                data, handles = fill.output()
                total = fill.total()
        finally:
            fill.close()
        if not fitted:  # mypyc compiles no `continue` inside try/finally
            continue
        content = dict(frame)
        content["data"] = data
        if handles:
            content["handles"] = [h.to_json() for h in handles]
        raw = canonical_bytes(content)
        text = raw.decode("utf-8")
        if _STRICT and len(text) != total:
            raise AssertionError(f"view size accounting is off: predicted {total}, rendered {len(text)}")
        if len(text) > limit:
            continue
        if fixed_data or fixed_handles:
            content["data"] = {**data, **fixed_data}
            handles = [*handles, *fixed_handles]
            content["handles"] = [h.to_json() for h in handles]
            raw = canonical_bytes(content)
            text = raw.decode("utf-8")
        return index, text, raw, handles
    return None


def _cacheable(blueprint: KernelBlueprint, worker: str) -> bool:
    """False when cutting the quarantine region out of ``worker``'s state (readable_state) could
    remove an array item, which would move the later items off the paths the cache keeps them by."""
    hidden = quarantine_hidden(blueprint, worker)
    return hidden is None or not any(is_array_index(t) for t in hidden)


def _fixed(
    state: JSON, reads: Sequence[Any], pinned: Sequence[str], windows: Mapping[str, int]
) -> tuple[dict[str, JSON], list[Handle]]:
    """The pinned paths (whole) and the windows (newest items whole, a range handle for the
    earlier ones) of a view: shown outside the budget, so no budget can cut them. A path that
    does not exist in the state is simply absent (the schema decides whether it may be)."""
    data: dict[str, JSON] = {}
    handles: list[Handle] = []
    for pattern in reads:
        text = pattern.text
        if text not in pinned and text not in windows:
            continue
        found, value = _lookup(state, pattern.tokens)
        if not found:
            continue
        size = windows.get(text)
        if size is None or not isinstance(value, list):
            data[text] = value  # View.data is parsed from the rendered text: nothing is shared
            continue
        start = max(0, len(value) - size)
        for i in range(start, len(value)):
            data[f"{text}/{i}"] = value[i]
        if start:
            handles.append(Handle(f"{text}#[0:{start}]", text, f"[0:{start}]", items=start))
    return data, handles


def _lookup(state: JSON, tokens: Sequence[str]) -> tuple[bool, JSON]:
    node = state
    for token in tokens:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False, None
    return True, node


def _view(worker: str, version: int, budget: int, level: int, text: str, raw: bytes, handles: list[Handle]) -> View:
    """The View of rendered ``text``; ``raw`` is its UTF-8 form, as built (hashed as is rather
    than encoded again). Its members are parsed from ``text`` when read (see View)."""
    return View(
        worker=worker,
        version=version,
        budget=budget,
        handles=tuple(handles),
        size=len(text),
        hash=sha256_hex(raw),
        level=level,
        text=text,
    )


def kernel_view(kernel: Kernel, worker_name: str, **kwargs: Any) -> View:
    """build_view over a kernel's committed state and version (same keyword arguments)."""
    return build_view(kernel.blueprint, worker_name, kernel.state, kernel.version, **kwargs)


def visible_pointers(view: View | Mapping[str, JSON]) -> list[str]:
    """Every pointer a view's data exposes: each key and every node below it (for audits)."""
    data = view.data if isinstance(view, View) else view
    out: list[str] = []
    stack: list[tuple[str, JSON]] = list(data.items())
    while stack:
        ptr, value = stack.pop()
        out.append(ptr)
        if isinstance(value, dict):
            stack.extend((f"{ptr}/{escape_token(k)}", v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{ptr}/{i}", v) for i, v in enumerate(value))
    return sorted(out)
