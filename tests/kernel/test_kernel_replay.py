"""Replay: the log reproduces every state hash (fast and revalidating), and any alteration of a
stored record is reported at that record."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import pytest
from kernel_testkit import canon, claims_blueprint, make_blueprint

from slateboard._native import native_modules
from slateboard.blueprint import CompiledBlueprint
from slateboard.kernel import Kernel, Proposal, Record, replay, state_hash

PROPOSALS = [
    Proposal(
        "writer", [{"op": "add", "path": "/claims/-", "value": {"text": "b", "status": "open"}}], viewed_version=0
    ),
    Proposal("writer", [{"op": "replace", "path": "/secret", "value": "x"}]),  # authorise
    Proposal("writer", '[{"op": "replace", "path": "/count", "value": 4}]'),
    Proposal("writer", [{"op": "replace", "path": "/count", "value": 4}]),  # noop
    Proposal(
        "writer", b'[{"op": "add", "path": "/notes/k", "value": "v"}]', viewed_version=2
    ),  # stale (notes? no: count)
    Proposal("admin", [{"op": "move", "from": "/claims/0", "path": "/claims/1"}]),
    Proposal("admin", [{"op": "replace", "path": "/count", "value": "x"}]),  # schema
    Proposal("writer", [{"op": "test", "path": "/count", "value": 5}]),  # preconditions
    Proposal("admin", [{"op": "copy", "from": "/claims/0", "path": "/claims/-"}, {"op": "remove", "path": "/secret"}]),
    Proposal("ghost", "[]"),
]


def build_log(with_action: bool = True) -> Any:
    bp = claims_blueprint()
    k = Kernel(bp)
    initial = bp.initial_state()
    records: list[Record] = []
    states: list[bytes] = []
    for i, p in enumerate(PROPOSALS):
        records.append(k.submit(p).record)
        states.append(canon(k.state))
        if with_action and i == 4:
            records.append(k.commit(k.action("circuit", "retry with feedback", worker="writer", meta={"n": 1})))
            states.append(canon(k.state))
    return bp, initial, records, states, k


def test_the_fixture_log_covers_every_outcome():
    _, _, records, _, _ = build_log()
    outcomes = {(r.outcome, r.stage) for r in records}
    assert {
        ("accepted", None),
        ("noop", None),
        ("action", None),
        ("rejected", "authorise"),
        ("rejected", "schema"),
        ("rejected", "preconditions"),
    } <= outcomes


@pytest.mark.parametrize("revalidate", [False, True], ids=["fast", "revalidate"])
def test_replay_reproduces_every_state(revalidate):
    bp, initial, records, states, k = build_log()
    seen: list[tuple[int, bytes, str]] = []
    report = replay(
        bp, initial, records, revalidate=revalidate, on_state=lambda r, s: seen.append((r.seq, canon(s), state_hash(s)))
    )
    assert report.ok, str(report)
    assert (report.checked, report.version, report.state_hash) == (len(records), k.version, k.state_hash)
    assert canon(report.state) == canon(k.state)
    assert [s[0] for s in seen] == [r.seq for r in records]
    assert [s[1] for s in seen] == states
    assert [s[2] for s in seen] == [r.state_after for r in records]
    assert canon(initial) == canon(bp.initial_state())  # replay did not mutate its input


@pytest.mark.parametrize("revalidate", [False, True], ids=["fast", "revalidate"])
def test_replay_from_a_snapshot(revalidate):
    bp, _initial, records, states, k = build_log(with_action=False)
    cut = 5
    snap = json.loads(states[cut - 1])
    rec = records[cut - 1]
    report = replay(
        bp,
        snap,
        records[cut:],
        revalidate=revalidate,
        start_version=rec.version,
        start_seq=rec.seq,
        start_hash=rec.hash,
    )
    assert report.ok, str(report)
    assert report.state_hash == k.state_hash


def _reseal_chain(records: list[Record], start: int) -> list[Record]:
    """Re-seal records[start:] so every hash and prev link is consistent again (a forger's log)."""
    out = list(records[:start])
    for rec in records[start:]:
        prev = out[-1].hash if out else rec.prev
        out.append(dataclasses.replace(rec, prev=prev).sealed())
    return out


@pytest.mark.parametrize("revalidate", [False, True], ids=["fast", "revalidate"])
@pytest.mark.parametrize(
    ("name", "tamper", "bad_index"),
    [
        ("edit-without-resealing", lambda rs: [*rs[:3], dataclasses.replace(rs[3], reason="x"), *rs[4:]], 3),
        ("drop-a-record", lambda rs: rs[:2] + rs[3:], 2),
        ("swap-two-records", lambda rs: [*rs[:2], rs[3], rs[2], *rs[4:]], 2),
        ("duplicate-a-record", lambda rs: [*rs[:3], rs[2], *rs[3:]], 3),
        (
            "forged-state-after",
            lambda rs: _reseal_chain([*rs[:2], dataclasses.replace(rs[2], state_after="0" * 64), *rs[3:]], 2),
            2,
        ),
        (
            "forged-patch",
            lambda rs: _reseal_chain(
                [*rs[:2], dataclasses.replace(rs[2], patch='[{"op":"replace","path":"/count","value":5}]'), *rs[3:]], 2
            ),
            2,
        ),
        ("forged-version", lambda rs: _reseal_chain([*rs[:1], dataclasses.replace(rs[1], version=7), *rs[2:]], 1), 1),
        (
            "rejection-claims-change",
            lambda rs: _reseal_chain([*rs[:1], dataclasses.replace(rs[1], state_after=rs[0].state_before), *rs[2:]], 1),
            1,
        ),
    ],
)
def test_replay_reports_the_altered_record(name, tamper, bad_index, revalidate):
    bp, initial, records, _, _ = build_log()
    tampered = tamper(list(records))
    report = replay(bp, initial, tampered, revalidate=revalidate)
    assert not report.ok
    # the record at that position, named by the seq it claims or by the seq it should have
    assert report.bad_seq in (tampered[bad_index].seq, records[bad_index].seq), str(report)
    assert report.problem
    assert report.checked == bad_index


def test_revalidate_catches_a_forged_decision_that_fast_mode_cannot():
    """A forger rewrites an authorised patch's worker to one without the right: the hashes all
    check out, so only re-deciding can tell."""
    bp, initial, records, _, _ = build_log()
    i = next(n for n, r in enumerate(records) if r.worker == "admin" and r.outcome == "accepted")  # the move
    assert '"move"' in records[i].patch
    forged = _reseal_chain([*records[:i], dataclasses.replace(records[i], worker="writer"), *records[i + 1 :]], i)
    assert replay(bp, initial, forged).ok
    report = replay(bp, initial, forged, revalidate=True)
    assert not report.ok and report.bad_seq == records[i].seq
    assert "rejected/ops" in (report.problem or "")


@pytest.mark.parametrize(
    "patch",
    [
        [{"op": "add", "path": "/count", "value": math.nan}],
        [{"op": "add", "path": "/notes/a", "value": {1, 2}}],
        ({"op": "add", "path": "/count", "value": 1},),
        b'[{"op": "add", "path": "/notes/a", "value": "\xff"}]',
        '[{"op": "add", "path": "/notes/a", "value": "' + "x" * 5000 + '"}]',
        '[{"op": "add", "path": "/notes/a", "value": "' + "\\u00e9" * 700 + '"}]',
        [{"op": "add", "path": "/notes/a", "value": [[[[[[[[[[[[[[[[[[[["x"]]]]]]]]]]]]]]]]]]]]}],
    ],
    ids=[
        "py-nan",
        "py-set",
        "py-tuple-patch",
        "bytes-not-utf8",
        "text-over-limit",
        "escapes-over-limit",
        "py-too-deep",
    ],
)
def test_revalidate_reproduces_parse_stage_rejections(patch):
    bp = claims_blueprint()
    k = Kernel(bp)
    d = k.submit(Proposal("writer", patch))
    assert (d.record.outcome, d.stage) == ("rejected", "parse")
    follow = k.submit(Proposal("writer", [{"op": "replace", "path": "/count", "value": 1}])).record
    assert replay(bp, bp.initial_state(), [d.record, follow]).ok
    report = replay(bp, bp.initial_state(), [d.record, follow], revalidate=True)
    assert report.ok, str(report)


def test_revalidate_reproduces_an_accepted_python_patch_near_the_byte_limit():
    bp = claims_blueprint()
    k = Kernel(bp)
    d = k.submit(Proposal("writer", [{"op": "add", "path": "/notes/k", "value": "é" * 2100}]))
    report = replay(bp, bp.initial_state(), [d.record], revalidate=True)
    assert report.ok, f"kernel said {d.record.outcome}/{d.stage}; {report}"


def test_replay_never_raises_on_a_deep_snapshot():
    bp = make_blueprint({"type": "object"}, {})
    deep: object = 0
    for _ in range(300):
        deep = {"x": deep}
    report = replay(bp, {"a": deep}, [], start_version=3)  # must report, not raise
    assert report.ok or report.problem


# -- stored bytes ------------------------------------------------------------------------------


def flip_report(
    records: list[Record], bp: CompiledBlueprint, initial: Any, index: int, pos: int, mask: int
) -> tuple[bool, str]:
    """Flip one byte of record ``index``'s stored form; (detected, description)."""
    raw = bytearray(records[index].to_bytes())
    raw[pos] ^= mask
    try:
        altered = Record.from_bytes(bytes(raw))
    except Exception:
        return True, "does not parse"
    log = [*records[:index], altered]  # later records cannot change whether it is named here
    for revalidate in (False, True):
        report = replay(bp, initial, log, revalidate=revalidate)
        if report.bad_seq != records[index].seq:
            mode = "revalidate" if revalidate else "fast"
            ctx = bytes(raw[max(0, pos - 12) : pos + 8])
            return (
                False,
                f"record {index} byte {pos} ^0x{mask:02x} ({ctx!r}): {mode} replay says bad_seq={report.bad_seq}",
            )
    return True, "replay names it"


def test_every_single_bit_flip_of_a_stored_record_is_detected():
    bp, initial, records, _, _ = build_log()
    misses = []
    # one record of each kind: accepted with meta, rejected, accepted text, action
    for index in (0, 1, 2, 5):
        for pos in range(len(records[index].to_bytes())):
            detected, why = flip_report(records, bp, initial, index, pos, 0x01)
            if not detected:
                misses.append(why)
    assert not misses, f"{len(misses)} undetected flips, e.g.:\n" + "\n".join(misses[:15])


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b'"seq":2,', b'"seq":3,'),  # a record that claims to be another one
        (b'"meta":{}', b'"mfta":{}'),  # unknown key; meta silently defaults to {}
        (b'"tokens_in":0', b'"tokens_io":0'),  # usage field silently defaults
        (b'"latency_ms":0.0', b'"latency_ms":0e0'),  # same float, different bytes
    ],
    ids=["seq", "meta-key", "usage-key", "float-spelling"],
)
def test_specific_single_byte_alterations_are_detected(old, new):
    bp, initial, records, _, _ = build_log()
    index = 1
    raw = records[index].to_bytes()
    assert raw.count(old) == 1 and len(old) == len(new)
    diff = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
    assert len(diff) == 1  # exactly one byte changes
    pos = raw.index(old) + diff[0]
    detected, why = flip_report(records, bp, initial, index, pos, raw[pos] ^ new[diff[0]])
    assert detected, why


@pytest.mark.parametrize("revalidate", [False, True], ids=["fast", "revalidate"])
@pytest.mark.parametrize(
    "change",
    [{"meta": []}, {"worker": None}, {"state_before": None}, {"patch": 5}],
    ids=["meta-list", "proposal-without-worker", "state-before-null", "patch-int"],
)
def test_replay_never_raises_on_a_sealed_but_malformed_record(change, revalidate):
    """A record with wrong field types but a matching hash (a buggy writer, or a forger who
    re-sealed it): replay may accept or report it, but it must not raise."""
    bp, initial, records, _, _ = build_log()
    try:
        first = dataclasses.replace(records[0], **change)
    except TypeError:
        # The compiled Record (slateboard._native) checks its field types when it is built, so such
        # a record cannot reach replay at all; stored ones are refused by Record.from_json.
        assert "slateboard.kernel.record" in native_modules()
        return
    forged = _reseal_chain([first, *records[1:]], 0)
    report = replay(bp, initial, forged, revalidate=revalidate)  # must not raise
    assert report.ok or report.bad_seq == 1, str(report)
