"""Budgeted context views: the bounded, hashed slice of the board one worker sees.

``build_view(blueprint, worker, state, version, ...)`` materialises what a worker may condition
on before it proposes a patch (paper section 3.5). It is pure and deterministic, and it
guarantees:

* **Read contract.** Every pointer in the view's ``data`` (and every node below it) lies inside
  a read pattern of the worker (``region_contains``). ``/claims/*/text`` exposes the ``text`` of
  each claim and nothing else; structure above readable nodes appears only as the pointers
  themselves. Handle ids use an item's ``id`` field only when that field is readable.
* **Visibility on entries.** An entry of a collection with visibility that is hidden from the
  worker is cut out before anything else (``readable_state``), so the view is byte for byte the
  view of the state without it: no data, summary, handle, count or expansion shows it, and an
  event or recent pointer inside it is dropped (``slateboard.kernel.visibility``).
* **Budget.** ``len(view.render()) <= budget`` always, where budget is the worker's
  ``view_budget`` or the ``budget`` argument (e.g. a circuit "tighten" action). Sizes are
  accounted exactly, in characters of the canonical JSON rendering.
* **Pinned paths and windows.** The worker's ``pinned`` read paths are shown whole and its
  ``windows`` (array read paths) as their newest N items whole plus one range handle for the
  earlier ones, at every budget and every degradation level: the budget bounds everything
  else, so ``len(render()) <= budget + size of the pinned and windowed parts``. A value a
  worker's decoding or an invariant depends on (an allowed-command list, a progress flag) is
  pinned so that no budget can hide it.
* **Hash.** ``view.hash`` is the SHA-256 of ``render()``: it changes when a visible node
  changes and not when anything outside the read contract changes (the version is not shown).

Shape of ``render()`` (canonical JSON: sorted keys, no whitespace; empty parts are left out)::

    {"data":       {"/query": "...", "/claims/3": {...}, "/claims/4/text": "..."},
     "event":      {"op": "add", "path": "/claims/4", "version": 7},
     "handles":    [{"handle": "/claims#c1", "pointer": "/claims", "id": "c1",
                     "path": "/claims/0", "summary": "{\\"id\\":\\"c1\\",...", "size": 412},
                    {"handle": "/claims#[1:3]", "pointer": "/claims", "id": "[1:3]", "items": 2}],
     "notes":      ["expand \\"/secret#x\\" ignored: no such handle inside the read contract"],
     "rejections": [{"stage": "schema", "reason": "...", "patch": "[{\\"op\\":..."}],
     "writable":   [{"path": "/claims/*/status", "ops": ["add", "replace", "test"],
                     "schema": {"enum": ["open", "supported", "refuted"]}}]}

``data`` maps concrete JSON Pointers to the *exact* state value there; keys never overlap. A
region too large for the budget is opened top-down: expansion targets, then the triggering
event's node and ``recent`` nodes, then shallower before deeper; among siblings small scalars and
schema-required members first (objects) and the newest items first (arrays). What does not fit
is summarised by an item handle or, under pressure, by a range handle over several members;
small objects (records) are opened all at once or not at all, so opening one never shows less
than its handle did. When even the fixed parts do not fit, the view degrades deterministically
(``View.level``): fewer and shorter rejections, shorter schema fragments, event and summaries,
then no schema, notes or event, and finally only data. Rejection text, schema fragments and the
event are clipped with a ``…[+N chars]`` marker; data values are never altered. Of an event
object only the scalar members named in ``EVENT_KEYS`` are shown (never a ``value``).

**Handles.** ``"<collection pointer>#<id>"``: the id is an array item's ``id`` field when that
field is readable (a string or integer), else the item's index or the object member's key. So
an item keeps its handle across versions while it stays in the same collection: always for
appends and for changes elsewhere, and also across insertions before it when it has an id (a
handle below an array item contains the item's index in its pointer). Range handles
``"<pointer>#[a:b]"`` are paging cursors over positions and only last while the collection keeps
its shape.

**Expansion convention.** A worker asks to see handles in full by adding an ``"expand"`` member
to its reply object, next to its patch: ``{"patch": [...], "expand": ["/claims#c1", ...]}``. The
runner reads it with ``parse_expand_request(reply)`` and passes the result as
``build_view(..., expand=...)`` for the worker's next invocation. Expansion is not a patch op,
so it needs no write access and never touches the state or the log except through the view
hash. Requested handles are paged in first (in full when they fit, else opened as far as the
budget allows); a handle that does not resolve inside the read contract is ignored and a note
says so (the note is the same whether the node exists or not, so it reveals nothing).

Cost: O(size of the view + members looked at), plus one pass over the members of collections
reached through a ``*`` pattern (to know which lead to readable nodes); measuring stops at the
space left, large readable collections are read lazily, newest first, and nothing but the shown
values is copied.

Public API: ``build_view``, ``kernel_view`` (the same over a Kernel's committed state),
``parse_expand_request``, ``visible_pointers`` (every pointer a view's data exposes, for
audits), ``View``, ``Handle``, ``ViewCache`` (what consecutive builds of one board's views
reuse: pass ``build_view(..., cache=...)`` and tell it every committed change; the view is
byte-identical to one built without it); ``readable_state`` / ``quarantine_hidden`` (read isolation for the
quarantine region, which ``build_view`` applies).
"""

from ._build import build_view, kernel_view, parse_expand_request
from ._cache import ViewCache
from ._model import Handle, View
from ._quarantine import quarantine_hidden, readable_state

__all__ = [
    "Handle",
    "View",
    "ViewCache",
    "build_view",
    "kernel_view",
    "parse_expand_request",
    "quarantine_hidden",
    "readable_state",
]
