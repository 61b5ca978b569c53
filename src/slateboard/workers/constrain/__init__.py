"""Contract-constrained decoding: the JSON Schema of the proposals a worker is allowed to make.

``proposal_schema(blueprint, worker, state)`` derives, from the worker's write contract, its
allowed ops, the state schema and the current state, a JSON Schema whose instances are patches
the kernel authorises and whose values are well-typed. Passed to a model as ``json_schema`` (the
local model compiles it to a grammar), it lets even a 135M-parameter model emit only authorised,
well-typed proposals.

**Wrapper.** Providers' JSON-schema modes want an object at the top, so the schema describes
``{"patch": [op, ...]}`` (optionally with ``"expand": [handle, ...]``, see slateboard.views);
``slateboard.workers.parse.parse_reply`` unwraps it. ``ConstrainedSchema.patch_schema()`` is the bare
array form.

**Shape.** ``patch`` is an array of 1 to ``max_ops`` operations, each matching one of an ``anyOf``
of op schemas. There is one op schema per (op, value schema) group: ``{"op": {"const": op},
"path": {"enum": [concrete paths]}, "value": <schema fragment at those paths>}``. Concrete paths
come from expanding each write pattern over the *current state*:

* ``/claims/*/status`` -> ``/claims/0/status``, ``/claims/1/status``, ... for each existing claim
  (replace/remove where the member exists; add where it does not yet);
* ``/notes/-`` (or ``/notes/*`` over an array) -> ``/notes/-`` (add, an append);
* ``/notes/*`` over an object -> its existing keys and the property names its schema declares.

**Guarantees** (for every instance of the schema, checked by the test-suite with hypothesis):

* the kernel's ``parse``, ``ops`` and ``authorise`` stages accept it: every op is one the worker
  is granted and every path is covered by one of its write patterns;
* a one-op patch is never rejected at stage ``schema``: the value is validated against the very
  fragment the kernel uses at that path, a ``remove`` never drops a required member or goes
  under ``minItems``, and an append or a new member is only offered below ``maxItems`` /
  ``maxProperties``. Two exceptions, where the kernel stays the judge: several ops in one patch
  can together break a container bound or shift array indices (stages ``apply``/``schema``), and
  a container whose schema constrains its members *jointly* (``uniqueItems``, ``contains``,
  ``allOf``/``anyOf``/``oneOf``/``not``, ``if``/``then``/``else``, ``enum``/``const`` on the
  container) can still reject a change below it (appends and removals are not offered directly
  below ``uniqueItems``/``prefixItems`` arrays).
* ``replace``/``remove``/``test`` target existing nodes, ``add`` targets new members and appends;
  a replacement at an ``enum``/``const``/boolean location leaves out the current value (it would
  be a no-op).

**Identity.** An array item's ``id`` member identifies it (view handles use it too), so a new item
(an append, or an ``add`` inserting into an array) is offered only with an id none of its
siblings uses: an ``enum``/``const`` id schema loses the used values, and an id whose schema is a
numbered name (``pattern: "^h[0-9]+$"``, ``^ev\\d+$``: a literal prefix and digits) or an integer
becomes the next free one (``h<largest used + 1>``, from 1). The id is a value the kernel would
accept there, so the guarantees hold; the schema is stricter than the state schema only in
leaving out ids already taken. Other id schemas are left to the kernel's invariants
(``fresh_ids=False`` turns this off).

**References.** A schema node annotated ``"x-refers-to": "<pointer pattern>"`` (for example
``{"type": "string", "x-refers-to": "/hypotheses/*/id"}``) holds a value that names an existing
node value: the offered values are the values now found at that pattern in the state (the last
``max_enum`` of them, those valid for the node), as an ``enum``. JSON Schema ignores the
keyword, so pair it with an invariant that the kernel checks; without any such value yet the node
is left as it is (the kernel judges).

**Bounds.** At most ``max_enum`` paths are listed per group. A larger group whose varying path
segments are all array indices (or keys of a plain map) is described by a ``pattern`` regex
instead (still authorised and well-typed, but existence is then checked by the kernel); any
other overflow keeps the ``max_enum`` *last* paths (newest array items) and sets ``truncated``.

**Left out** (documented limits): ``move``/``copy`` (their effect on types depends on the source),
``test`` unless ``include_test=True`` (a test-only patch is a no-op), paths below a ``-`` inside a
pattern, and for a deep pattern ``/x/**`` everything deeper than ``/x`` and its members. New keys of
a plain map (``additionalProperties`` only) are offered through a key ``pattern``. A worker with
nothing it may do in the current state gets no schema (``proposal_schema`` returns None).

References (``$ref``) inside fragments are hoisted into ``$defs`` under unique names
(``ref0``, ``ref1``...), so the schema is self-contained and grammar converters that name rules
after the last segment of a reference do not conflate two of them.

The modules by concern: ``_targets`` (write patterns expanded over the state, through the
kernel's ``may_write``), ``_values`` (container bounds, no-op avoidance, fresh ids),
``_fragments`` (``$ref`` hoisting, string tightening, references, regexes), ``_schema`` (the
proposal schema) and ``_sketch`` (a state rebuilt from a view).
"""

from ._fragments import self_contained
from ._schema import DEFAULT_MAX_OPS, PATCH_KEY, ConstrainedSchema, generic_patch_schema, proposal_schema
from ._sketch import sketch_state

__all__ = [
    "DEFAULT_MAX_OPS",
    "PATCH_KEY",
    "ConstrainedSchema",
    "generic_patch_schema",
    "proposal_schema",
    "self_contained",
    "sketch_state",
]
