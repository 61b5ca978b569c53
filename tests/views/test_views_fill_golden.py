"""The fill's choices on seeded random boards equal the hashes recorded before its rewrite (issue 35).

``views/_fill.py`` was rewritten for readability (names, one memo structure, split by phase) with
the promise that no view changes by a byte. ``test_views_golden`` replays a corpus of mixed boards;
this one aims at the fill itself: boards with long id'd arrays, records (objects of at most
``RECORD_MAX`` members, opened all at once) and larger maps, schema-required members, deep values
and non-ASCII text, at budgets from a few dozen characters to the whole board, each built three
times in a row with the handles of the previous view asked for (so items, ranges and collections
are opened), with an event and recent paths. Every view's SHA-256, level and size was recorded by
the builder as it stood before the rewrite (commit 294401e) in ``views_fill_golden.json``; each view
is also built with a ``ViewCache`` kept across the board's builds, which must give the same view,
and every build checks that the fill's running size equals the rendered length (``_STRICT``).

The boards come from ``random.Random(seed)`` (its sequence for a seed is stable across Python
versions), so replaying needs only this file. Regenerate it only for an intended change of the
views' output: ``PYTHONPATH=src python tests/views/test_views_fill_golden.py``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from views_testkit import nodes

from slateboard.blueprint import compile_blueprint
from slateboard.kernel.canonical import JSON
from slateboard.kernel.pointer import format_pointer
from slateboard.views import View, ViewCache, build_view
from slateboard.views import _build as views_build

GOLDEN = Path(__file__).with_name("views_fill_golden.json")
BOARDS = 400
CHUNKS = 8  # test cases the boards are spread over (a failure names a smaller range)

WORKERS: dict[str, dict[str, Any]] = {
    "all": {"reads": ["/**"]},
    "fields": {"reads": ["/log/*/t", "/log/*/id", "/map/*", "/rec"]},
    "deep": {"reads": ["/deep/**", "/log", "/big"]},
    "windowed": {"reads": ["/log", "/map", "/rec"], "pinned": ["/rec"], "windows": {"/log": 3}},
}
SCHEMA = {
    "type": "object",
    "properties": {
        "log": {"type": "array", "items": {"required": ["id", "t", "meta"]}},
        "rec": {"type": "object", "required": ["k1", "k3", "k5"]},
    },
}
BP = compile_blueprint(
    {
        "schema": SCHEMA,
        "initial_state": {},
        "workers": {name: {**spec, "writes": ["/x"], "view_budget": 500} for name, spec in WORKERS.items()},
    }
)
ALPHABET = 'abcdefgh \u00e9\u4e2d"\\/~\n'


def _text(rng: random.Random, most: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, most)))


def _scalar(rng: random.Random) -> JSON:
    pick = rng.randrange(6)
    if pick == 0:
        return None
    if pick == 1:
        return rng.random() < 0.5
    if pick == 2:
        return rng.randint(-50, 10**6)
    if pick == 3:
        return round(rng.uniform(-100, 100), 3)
    return _text(rng, 30)


def _value(rng: random.Random, depth: int) -> JSON:
    if depth <= 0 or rng.random() < 0.35:
        return _scalar(rng)
    if rng.random() < 0.5:
        return [_value(rng, depth - 1) for _ in range(rng.randint(0, 5))]
    return {f"k{rng.randint(0, 30)}": _value(rng, depth - 1) for _ in range(rng.randint(0, 5))}


def _entry(rng: random.Random, i: int) -> JSON:
    pick = rng.randrange(5)
    if pick == 0:
        return _value(rng, 2)
    ident: JSON = rng.choice([i, f"e{i}", f"e{rng.randint(0, 9)}", None, "", True])
    entry: dict[str, JSON] = {"id": ident, "t": _text(rng, 60)}
    if pick >= 3:
        entry["meta"] = {"tags": [_text(rng, 6) for _ in range(rng.randint(0, 4))], "n": rng.randint(0, 9)}
    if pick == 4:
        entry["body"] = _value(rng, 3)
    return entry


def board(seed: int) -> dict[str, JSON]:
    """The board of ``seed``: a log of entries, a map, a record, a deep value and a long text."""
    rng = random.Random(seed)
    size = rng.choice([0, 1, 3, 10, 30, 80])
    return {
        "log": [_entry(rng, i) for i in range(size)],
        "map": {f"m{i}-{_text(rng, 4)}": _value(rng, 2) for i in range(rng.choice([0, 2, 12, 17, 40]))},
        "rec": {f"k{i}": _value(rng, 2) for i in range(rng.randint(0, 16))},
        "deep": _value(rng, 6),
        "big": _text(rng, 2000),
    }


def _summary(view: View) -> list[Any]:
    return [view.hash[:16], view.level, view.size]


def board_views(seed: int) -> list[list[Any]]:
    """Every view of board ``seed``, in order, each checked against a build with a kept cache."""
    rng = random.Random(seed * 7919 + 1)
    state = board(seed)
    pointers = [format_pointer(tokens) for tokens, _ in nodes(state)]
    event: JSON = {"op": "add", "path": rng.choice(pointers), "version": 1} if rng.random() < 0.7 else None
    recent = [rng.choice(pointers) for _ in range(rng.randint(0, 2))]
    budgets = [rng.choice([20, 60, 150, 400, 1000, 3000, 20000]), rng.randint(30, 2500)]
    cache = ViewCache()
    out: list[list[Any]] = []
    for worker in rng.sample(sorted(WORKERS), 2):
        for budget in budgets:
            expand: tuple[str, ...] = ()
            for _ in range(3):
                kw: dict[str, Any] = {"budget": budget, "event": event, "recent": recent, "expand": expand}
                view = build_view(BP, worker, state, 1, **kw)
                kept = build_view(BP, worker, state, 1, cache=cache, **kw)
                assert (kept.text, kept.handles, kept.level) == (view.text, view.handles, view.level)
                out.append(_summary(view))
                names = [h.handle for h in view.handles]
                expand = tuple(rng.sample(names, min(len(names), rng.randint(1, 3)))) if names else ()
    return out


def _golden() -> list[list[list[Any]]]:
    data: list[list[list[Any]]] = json.loads(GOLDEN.read_text(encoding="utf-8"))["boards"]
    return data


def test_the_corpus_reaches_every_kind_of_fill() -> None:
    # Guards the guard: the boards must open records, ranges and items at several levels.
    views = [v for b in _golden() for v in b]
    assert len(_golden()) == BOARDS and len(views) == BOARDS * 12
    assert len({v[1] for v in views}) >= 6, "views at many degradation levels"
    assert len({v[0] for v in views}) >= 2000, "thousands of distinct views"


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_fill_views_equal_the_hashes_recorded_before_the_rewrite(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(views_build, "_STRICT", True)  # and the fill's running size is exact
    golden = _golden()
    for seed in range(chunk, BOARDS, CHUNKS):
        got = board_views(seed)
        for i, (new, old) in enumerate(zip(got, golden[seed], strict=True)):
            assert new == old, f"board {seed}, view {i}: {new} != golden {old}"


def write_golden() -> None:
    """Record every board's views from the current builder."""
    data = {"boards": [board_views(seed) for seed in range(BOARDS)]}
    GOLDEN.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write_golden()
