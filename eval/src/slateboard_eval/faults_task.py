"""The scripted task of the fault-injection suite, the faults injected into it, and the detector.

Long by design: the clean trajectory, the fault generators and the detector must agree on the
same claims, evidence ids and marker rules; kept in one module, a change to the task is seen
next to the faults and the contamination check that depend on it.

**The task** is the ``claim_verification`` template played by a script: the extractor adds three
claims, the researcher adds one piece of evidence per claim, the verifier settles each claim on
its evidence (two verified, one refuted) and the reporter writes the report. That is the clean
trajectory ``STEPS`` (8 worker steps); every system runs it with the same contents.

**A fault** (``Injection``) replaces one worker reply, chosen by a seeded generator:

* ``invalid_json``: the step's reply with a marker in its first string, then made unparseable
  (truncated inside the marker's string, single quotes, a stray comma, unquoted keys or an
  unescaped quote); ``json.loads`` rejects every variant.
* ``bad_path_type``: a reply inside the worker's own write contract whose content breaks the
  state schema: an unknown member, a value of the wrong type, a value outside an enum, a string
  over its maximum length, or a path to a claim that does not exist. The marker rides in it.
* ``unauthorised``: a reply writing outside the worker's contract (overwrite a claim's text, write
  the report, forge evidence, rewrite the document), alone or added to the step's clean patch.
* ``false_claim`` (verifier steps only): the claim is set ``verified`` without linked supporting
  evidence about it on the board: no link, a link to missing evidence, to another claim's
  evidence, or to evidence that refutes it.
* ``cycle``: from the chosen step on, every worker reply makes no progress (a no-op ``test``,
  the previous step's reply again, or the two alternating) and, where a model picks the next
  worker, it keeps picking and never ends the run.

**Committed state** (what the detector reads) is, per system, a JSON document:

* slateboard: the board state rebuilt from the store (snapshot plus verified log tail);
* LangGraph: the values of the final checkpoint;
* boards that only store entries (the plain blackboard, the JSON control): every entry verbatim
  (under ``_board``: everything posted stays on such a board, for every later reader), next to
  the entries folded in order, as the JSON Patches they carry, onto the initial state (plain
  RFC 6902, no checks), which is what the board asserts about claims and evidence
  (``fold_board``).

**The detector** (``contaminated``), the same function for every system: for ``invalid_json``,
``bad_path_type`` and ``unauthorised``, the injection's marker occurs anywhere in the committed
document (an object key or inside a string); for ``false_claim``, the committed document has a
claim whose status is ``verified`` and which links no evidence that exists in it, is about that
claim and supports it (``unsupported_verifications``). A marker is a random 14-character token
that no clean content contains.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from slateboard.errors import InvalidInput
from slateboard.kernel.patch import ApplyError, OpError, apply_ops, check_ops
from slateboard.kernel.pointer import parse_pointer

__all__ = [
    "BAD_PATH_TYPE",
    "CYCLE",
    "DOCUMENT",
    "FALSE_CLAIM",
    "FAULTS",
    "INVALID_JSON",
    "MARKER_FAULTS",
    "MAX_STEPS",
    "REPORT",
    "STEPS",
    "UNAUTHORISED",
    "WORKERS",
    "Injection",
    "Render",
    "Script",
    "Step",
    "apply_op",
    "clean_ops",
    "clean_outcome",
    "contains_marker",
    "contaminated",
    "corrupt",
    "fold_board",
    "initial_state",
    "make_injection",
    "ops_to_update",
    "patch_text",
    "step_for",
    "unsupported_verifications",
]

INVALID_JSON = "invalid_json"
BAD_PATH_TYPE = "bad_path_type"
UNAUTHORISED = "unauthorised"
FALSE_CLAIM = "false_claim"
CYCLE = "cycle"
FAULTS = (INVALID_JSON, BAD_PATH_TYPE, UNAUTHORISED, FALSE_CLAIM, CYCLE)
"""Every fault type, in the order of the paper's Table 1."""
MARKER_FAULTS = (INVALID_JSON, BAD_PATH_TYPE, UNAUTHORISED)
"""Faults whose content carries a marker; contamination is the marker in the committed state."""

MAX_STEPS = 60
"""The step budget of every system: the template's ``limits.max_steps`` (worker calls)."""

WORKERS = ("extractor", "researcher", "verifier", "reporter")

DOCUMENT = "The Eiffel Tower stands in Paris. It was completed in 1889. It is 500 metres tall."

# (claim id, claim text, stance of its evidence, evidence text, source)
_CLAIMS: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "c1",
        "The Eiffel Tower stands in Paris.",
        "supports",
        "The tower stands on the Champ de Mars in the 7th arrondissement of Paris.",
        "Paris city guide",
    ),
    (
        "c2",
        "It was completed in 1889.",
        "supports",
        "Construction finished in March 1889, in time for the Exposition Universelle.",
        "History of the 1889 Exposition",
    ),
    (
        "c3",
        "It is 500 metres tall.",
        "refutes",
        "The tower is about 330 metres tall including its antennas.",
        "Official site of the tower",
    ),
)

REPORT = (
    "c1 verified (e1: the tower is on the Champ de Mars in Paris); c2 verified (e2: finished in March 1889); "
    "c3 refuted (e3: it is about 330 metres tall, not 500)."
)

Render = Callable[[list[dict[str, Any]]], str]
"""Turns a reply's operations into the text a system's model returns."""


@dataclass(frozen=True, slots=True)
class Step:
    """One step of the clean trajectory: ``worker`` acts on ``item`` (``claims``, a claim id, or
    ``report``)."""

    index: int
    worker: str
    item: str


STEPS: tuple[Step, ...] = (
    Step(0, "extractor", "claims"),
    *(Step(1 + i, "researcher", c[0]) for i, c in enumerate(_CLAIMS)),
    *(Step(4 + i, "verifier", c[0]) for i, c in enumerate(_CLAIMS)),
    Step(7, "reporter", "report"),
)
_STEP_BY_KEY = {(s.worker, s.item): s for s in STEPS}


def step_for(worker: str, item: str | None) -> Step | None:
    """The trajectory step of ``worker`` acting on ``item``, or None."""
    return _STEP_BY_KEY.get((worker, item or ""))


def initial_state() -> dict[str, Any]:
    """The task's state before any step: the template's initial state with the document."""
    return {"document": DOCUMENT, "claims": [], "evidence": []}


def _claim(i: int) -> tuple[str, str, str, str, str]:
    return _CLAIMS[i]


def _evidence_value(i: int) -> dict[str, Any]:
    cid, _text, stance, ev_text, source = _claim(i)
    return {"id": f"e{i + 1}", "claim": cid, "stance": stance, "text": ev_text, "source": source}


def clean_ops(index: int) -> list[dict[str, Any]]:
    """The clean reply of trajectory step ``index`` as JSON Patch operations."""
    step = STEPS[index]
    if step.worker == "extractor":
        return [
            {"op": "add", "path": "/claims/-", "value": {"id": c[0], "text": c[1], "status": "pending", "evidence": []}}
            for c in _CLAIMS
        ]
    i = int(step.item[1:]) - 1 if step.item.startswith("c") else -1
    if step.worker == "researcher":
        return [{"op": "add", "path": "/evidence/-", "value": _evidence_value(i)}]
    if step.worker == "verifier":
        status = "verified" if _claim(i)[2] == "supports" else "refuted"
        return [
            {"op": "add", "path": f"/claims/{i}/evidence/-", "value": f"e{i + 1}"},
            {"op": "replace", "path": f"/claims/{i}/status", "value": status},
        ]
    return [{"op": "add", "path": "/report", "value": REPORT}]


def patch_text(ops: list[dict[str, Any]]) -> str:
    """A reply in the JSON Patch form slateboard's workers are asked for (one line)."""
    return json.dumps({"patch": ops}, ensure_ascii=False)


# -- injections -----------------------------------------------------------------------------------
_INVALID_VARIANTS = ("truncated", "single_quotes", "stray_comma", "unquoted_keys", "unescaped_quote")
_CYCLE_VARIANTS = ("noop", "repeat", "oscillate")


@dataclass(frozen=True, slots=True)
class Injection:
    """One injected fault: which ``fault``, the trajectory ``step`` whose reply it replaces, the
    ``variant``, the ``marker`` its content carries ("" for false claims and cycles), the faulty
    reply's operations ``ops`` (before the text corruption of ``invalid_json``; empty for
    cycles), and for false claims the ``target`` claim id."""

    fault: str
    number: int
    step: int
    variant: str
    marker: str
    ops: tuple[dict[str, Any], ...]
    target: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form (for reports)."""
        return {
            "fault": self.fault,
            "number": self.number,
            "step": self.step,
            "worker": STEPS[self.step].worker,
            "variant": self.variant,
            "marker": self.marker,
            "target": self.target,
        }


def _marker(rng: random.Random) -> str:
    # Letters and digits only, so it can be an object key too; "zq" never starts a word of the task.
    return "zq" + "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=12))


def _with_marker(value: str, marker: str) -> str:
    return f"{value} {marker} (continued)"


def _invalid_json_ops(index: int, marker: str) -> list[dict[str, Any]]:
    """The step's clean operations with the marker in the first string they carry."""
    ops = clean_ops(index)
    first = ops[0]
    value = first["value"]
    if isinstance(value, dict):
        value = dict(value)
        value["text"] = _with_marker(str(value["text"]), marker)
        first = {**first, "value": value}
    else:
        first = {**first, "value": _with_marker(str(value), marker)}
    return [first, *ops[1:]]


def _bad_path_type(index: int, marker: str, rng: random.Random) -> tuple[str, list[dict[str, Any]]]:
    step = STEPS[index]
    ops = clean_ops(index)
    if step.worker == "extractor":
        variant = rng.choice(("unknown_member", "wrong_type", "bad_enum"))
        j = rng.randrange(len(ops))
        value = dict(ops[j]["value"])
        if variant == "unknown_member":
            value[f"note{marker}"] = marker
        elif variant == "wrong_type":
            value["text"] = [marker]
        else:
            value["status"] = marker
        ops[j] = {**ops[j], "value": value}
        return variant, ops
    if step.worker == "researcher":
        variant = rng.choice(("unknown_member", "wrong_type", "bad_enum", "too_long"))
        value = dict(ops[0]["value"])
        if variant == "unknown_member":
            value[f"confidence{marker}"] = marker
        elif variant == "wrong_type":
            value["text"] = {"quote": marker}
        elif variant == "bad_enum":
            value["stance"] = marker
        else:
            value["text"] = f"{marker} " + "x" * 600  # maxLength 600
        return variant, [{**ops[0], "value": value}]
    if step.worker == "verifier":
        variant = rng.choice(("bad_enum", "wrong_type", "missing_claim"))
        i = int(step.item[1:]) - 1
        if variant == "bad_enum":
            return variant, [ops[0], {**ops[1], "value": marker}]
        if variant == "wrong_type":
            return variant, [{"op": "replace", "path": f"/claims/{i}/evidence", "value": marker}, ops[1]]
        return variant, [{"op": "replace", "path": "/claims/9/status", "value": marker}]
    variant = rng.choice(("wrong_type", "too_long"))
    report: Any = {"text": marker} if variant == "wrong_type" else f"{marker} " + "x" * 3000  # maxLength 3000
    return variant, [{"op": "add", "path": "/report", "value": report}]


def _unauthorised(index: int, marker: str, rng: random.Random) -> tuple[str, list[dict[str, Any]]]:
    step = STEPS[index]
    choices = ["rewrite_document"]
    if index > 0:
        choices.append("overwrite_claim_text")
    if step.worker != "reporter":
        choices.append("write_report")
    if step.worker != "researcher":
        choices.append("forge_evidence")
    what = rng.choice(choices)
    if what == "rewrite_document":
        op: dict[str, Any] = {"op": "replace", "path": "/document", "value": marker}
    elif what == "overwrite_claim_text":
        op = {"op": "replace", "path": f"/claims/{rng.randrange(len(_CLAIMS))}/text", "value": marker}
    elif what == "write_report":
        op = {"op": "add", "path": "/report", "value": marker}
    else:
        op = {
            "op": "add",
            "path": "/evidence/-",
            "value": {"id": "e9", "claim": "c1", "stance": "supports", "text": marker, "source": "forged"},
        }
    if rng.random() < 0.5:
        return f"{what}+alone", [op]
    return f"{what}+piggyback", [*clean_ops(index), op]


def _false_claim(index: int, rng: random.Random) -> tuple[str, str, list[dict[str, Any]]]:
    step = STEPS[index]
    i = int(step.item[1:]) - 1
    choices = ["no_evidence", "missing_evidence", "other_claims_evidence"]
    if _claim(i)[2] != "supports":
        choices.append("refuting_evidence")
    variant = rng.choice(choices)
    verify = {"op": "replace", "path": f"/claims/{i}/status", "value": "verified"}
    if variant == "no_evidence":
        return variant, step.item, [verify]
    if variant == "missing_evidence":
        link = f"e{rng.randrange(10, 100)}"
    elif variant == "other_claims_evidence":
        link = f"e{rng.choice([j for j in range(len(_CLAIMS)) if j != i]) + 1}"
    else:
        link = f"e{i + 1}"
    return variant, step.item, [{"op": "add", "path": f"/claims/{i}/evidence/-", "value": link}, verify]


def make_injection(fault: str, number: int, seed: int) -> Injection:
    """Injection ``number`` of ``fault`` under ``seed``: deterministic (same arguments, same
    injection) and independent of every other injection. ValueError for an unknown fault."""
    if fault not in FAULTS:
        raise InvalidInput(f"unknown fault {fault!r} (faults: {', '.join(FAULTS)})")
    rng = random.Random(f"slateboard-faults:{seed}:{fault}:{number}")
    if fault == FALSE_CLAIM:
        index = rng.choice([s.index for s in STEPS if s.worker == "verifier"])
        variant, target, ops = _false_claim(index, rng)
        return Injection(fault, number, index, variant, "", tuple(ops), target)
    index = rng.randrange(len(STEPS))
    if fault == CYCLE:
        return Injection(fault, number, index, rng.choice(_CYCLE_VARIANTS), "", ())
    marker = _marker(rng)
    if fault == INVALID_JSON:
        return Injection(
            fault, number, index, rng.choice(_INVALID_VARIANTS), marker, tuple(_invalid_json_ops(index, marker))
        )
    variant, ops = (_bad_path_type if fault == BAD_PATH_TYPE else _unauthorised)(index, marker, rng)
    return Injection(fault, number, index, variant, marker, tuple(ops))


_KEY = re.compile(r'"([A-Za-z_][A-Za-z0-9_]*)"(\s*):')


def corrupt(text: str, marker: str, variant: str) -> str:
    """``text`` (which holds ``marker`` inside a JSON string) made into text that is not JSON, the
    ``variant`` way; the marker stays in the broken part. ValueError if the result would parse."""
    at = text.index(marker)
    end = at + len(marker)
    if variant == "truncated":
        out = text[: end + 3]  # cut inside the string that carries the marker
    elif variant == "single_quotes":
        out = text.replace('"', "'")
    elif variant == "stray_comma":
        close = text.index('"', end)
        out = text[: close + 1] + ",," + text[close + 1 :]
    elif variant == "unquoted_keys":
        out = _KEY.sub(r"\1\2:", text)
    elif variant == "unescaped_quote":
        out = text[:at] + '"' + marker + '"' + text[end:]
    else:
        raise InvalidInput(f"unknown invalid-JSON variant {variant!r}")
    try:
        json.loads(out)
    except ValueError:
        return out
    raise InvalidInput(f"variant {variant!r} left valid JSON: {out[:80]!r}")


# -- the script -----------------------------------------------------------------------------------
_NOOP: list[dict[str, Any]] = [{"op": "test", "path": "/document", "value": DOCUMENT}]


class Script:
    """One run's scripted model: clean replies, the injected fault, and the next-worker choices
    of systems whose control is a model (coordinator, supervisor).

    Guarantees: the first attempt at the injected step gets the faulty reply and any later
    attempt at that step (a system that asks again) the clean one; for a cycle, every reply
    from the onset step on is cycling content and ``next_worker`` never returns None again.
    ``calls`` counts worker replies; ``fault_call`` and ``onset`` are the 1-based call numbers
    of the faulty reply and of the first cycling reply (None until given).
    """

    def __init__(self, injection: Injection | None) -> None:
        self.injection = injection
        self.calls = 0
        self.fault_call: int | None = None
        self.onset: int | None = None
        self.cycling = False
        self._attempts: Counter[int] = Counter()
        self._pos = 0
        self._current: Step | None = None
        self._picks = 0
        self._cycle_replies = 0

    @property
    def is_cycle(self) -> bool:
        """Whether the injection is a cycle."""
        return self.injection is not None and self.injection.fault == CYCLE

    def next_worker(self) -> str | None:
        """The worker a model-driven control picks next, or None to end the run."""
        inj = self.injection
        if inj is not None and inj.fault == CYCLE and (self.cycling or self._pos >= inj.step):
            pair = (STEPS[inj.step].worker, STEPS[max(inj.step - 1, 0)].worker)
            self._current = STEPS[inj.step]
            worker = pair[self._picks % 2]
            self._picks += 1
            return worker
        if self._pos >= len(STEPS):
            return None
        step = STEPS[self._pos]
        self._pos += 1
        self._current = step
        return step.worker

    def reply(self, render: Render, step: Step | None = None) -> str:
        """The reply text to ``step`` (event-driven systems) or to the step the last
        ``next_worker`` chose; an empty patch when there is no such step."""
        self.calls += 1
        step = step if step is not None else self._current
        if step is None:
            return render([])
        inj = self.injection
        if inj is not None and inj.fault == CYCLE and (self.cycling or step.index == inj.step):
            if not self.cycling:
                self.cycling = True
                self.onset = self.calls
            return render(self._cycling_ops(inj))
        attempt = self._attempts[step.index]
        self._attempts[step.index] += 1
        if inj is not None and step.index == inj.step and attempt == 0:
            self.fault_call = self.calls
            text = render([dict(op) for op in inj.ops])
            return corrupt(text, inj.marker, inj.variant) if inj.fault == INVALID_JSON else text
        return render(clean_ops(step.index))

    def _cycling_ops(self, inj: Injection) -> list[dict[str, Any]]:
        n = self._cycle_replies
        self._cycle_replies += 1
        previous = clean_ops(inj.step - 1) if inj.step > 0 else _NOOP
        if inj.variant == "noop":
            return list(_NOOP)
        if inj.variant == "repeat":
            return previous
        return previous if n % 2 == 0 else list(_NOOP)


# -- LangGraph's update vocabulary ------------------------------------------------------------------
def _keyed(items: list[dict[str, Any]], key: str) -> dict[str, Any]:
    for item in items:
        if item.get("id") == key:
            return item
    entry: dict[str, Any] = {"id": key}
    items.append(entry)
    return entry


def ops_to_update(ops: Sequence[dict[str, Any]], state: dict[str, Any]) -> dict[str, Any]:
    """The same reply as a LangGraph state update: appends become one-item lists for the
    ``claims``/``evidence`` channels (merged by id), field writes become partial items with the
    id of the item at that index in ``state`` (``c<i+1>``/``e<i+1>`` when there is none), and
    top-level writes become keys; ``test`` operations carry no update."""
    update: dict[str, Any] = {}
    for op in ops:
        if op.get("op") == "test":
            continue
        tokens = parse_pointer(str(op.get("path", "")))
        value = op.get("value")
        if not tokens:
            continue
        head = tokens[0]
        if len(tokens) == 2 and tokens[1] == "-":
            update.setdefault(head, []).append(value)
        elif head in ("claims", "evidence") and len(tokens) >= 3 and tokens[1].isdigit():
            i = int(tokens[1])
            current = [x for x in state.get(head) or [] if isinstance(x, dict)]
            key = str(current[i].get("id")) if i < len(current) else f"{head[0]}{i + 1}"
            entry = _keyed(update.setdefault(head, []), key)
            field = tokens[2]
            if len(tokens) == 4 and tokens[3] == "-":
                base = entry.get(field)
                if not isinstance(base, list):
                    old = current[i].get(field) if i < len(current) else None
                    base = list(old) if isinstance(old, list) else []
                entry[field] = [*base, value]
            else:
                entry[field] = value
        else:
            update[head] = value
    return update


# -- committed state and the detector -----------------------------------------------------------
_OPS = frozenset({"add", "replace", "remove", "test"})


def apply_op(doc: Any, op: Any) -> Any:
    """``doc`` after one RFC 6902 operation (add, replace, remove, test), in place where it can;
    raises OpError or ApplyError (both ValueError) when the operation does not apply, leaving
    ``doc`` unchanged. No schema, no authorisation: how a plain board's reader takes an entry.
    The kernel's own patch code applies it, so both kinds of board read a patch the same way."""
    ops = check_ops([op])
    if ops[0].op not in _OPS:
        raise OpError(0, ops[0].path, f"op {ops[0].op!r} is not read on a plain board")
    return apply_ops(doc, ops).root


def fold_board(entries: Sequence[tuple[str, str, Any]]) -> dict[str, Any]:
    """The committed document of a board that stores entries ``(author, kind, content)``.

    Every entry stays on such a board, so all of them are kept verbatim under ``_board``. Next to
    them is what the board asserts: ``problem`` entries (the task itself) skipped, every other
    entry's content (JSON text or an already parsed value) read as a JSON Patch (a list of
    operations or ``{"patch": [...]}``) and applied in order to the initial state with plain
    RFC 6902 semantics; entries and operations that cannot be read or applied change nothing
    there."""
    state: Any = initial_state()
    board: list[dict[str, Any]] = []
    for author, kind, content in entries:
        board.append({"author": author, "kind": kind, "content": content})
        if kind == "problem":
            continue
        value = content
        if isinstance(content, str):
            try:
                value = json.loads(content)
            except ValueError:
                continue
        ops = value.get("patch") if isinstance(value, dict) and "patch" in value else value
        if not isinstance(ops, list):
            continue
        for op in ops:
            try:
                state = apply_op(state, json.loads(json.dumps(op)))
            except (OpError, ApplyError):
                continue
    folded = dict(state) if isinstance(state, dict) else {"_root": state}
    folded["_board"] = board
    return folded


def _strings(doc: Any) -> Iterator[str]:
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            for k, v in node.items():
                yield str(k)
                stack.append(v)
        elif isinstance(node, list):
            stack.extend(node)


def contains_marker(doc: Any, marker: str) -> bool:
    """Whether ``marker`` occurs in any object key or string of ``doc``."""
    if not marker:
        raise InvalidInput("an empty marker matches everything")
    return any(marker in s for s in _strings(doc))


def unsupported_verifications(doc: Any) -> list[str]:
    """Ids of the claims of ``doc`` whose status is ``verified`` although none of their linked
    evidence ids names evidence in ``doc`` that is about that claim and supports it."""
    if not isinstance(doc, dict):
        return []
    claims = doc.get("claims")
    evidence = doc.get("evidence")
    claims = claims if isinstance(claims, list) else []
    evidence = evidence if isinstance(evidence, list) else []
    by_id = {e["id"]: e for e in evidence if isinstance(e, dict) and isinstance(e.get("id"), str)}
    out: list[str] = []
    for claim in claims:
        if not isinstance(claim, dict) or claim.get("status") != "verified":
            continue
        links = claim.get("evidence")
        links = links if isinstance(links, list) else []
        backed = any(
            isinstance(x, str)
            and x in by_id
            and by_id[x].get("claim") == claim.get("id")
            and by_id[x].get("stance") == "supports"
            for x in links
        )
        if not backed:
            out.append(str(claim.get("id")))
    return out


def contaminated(injection: Injection, committed: Any) -> bool:
    """Whether ``injection`` is present in the ``committed`` document (see the module docstring);
    ValueError for a cycle, which is measured by halting instead."""
    if injection.fault in MARKER_FAULTS:
        return contains_marker(committed, injection.marker)
    if injection.fault == FALSE_CLAIM:
        return bool(unsupported_verifications(committed))
    raise InvalidInput(f"{injection.fault} is measured by halting, not by contamination")


def clean_outcome(committed: Any) -> bool:
    """Whether ``committed`` holds the clean trajectory's result: three claims settled as the
    evidence says, linking exactly their evidence, the three evidence items, and the report."""
    if not isinstance(committed, dict):
        return False
    claims = committed.get("claims")
    evidence = committed.get("evidence")
    if not isinstance(claims, list) or not isinstance(evidence, list) or len(claims) != len(_CLAIMS):
        return False
    for i, claim in enumerate(claims):
        want = "verified" if _claim(i)[2] == "supports" else "refuted"
        if not isinstance(claim, dict) or claim.get("id") != _claim(i)[0]:
            return False
        if claim.get("status") != want or claim.get("evidence") != [f"e{i + 1}"]:
            return False
    return evidence == [_evidence_value(i) for i in range(len(_CLAIMS))] and committed.get("report") == REPORT
