"""Game generation offline: the seeded CI set, byte-identical regeneration, the cache."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textworld", reason="TextWorld is not installed (pip install 'slateboard-eval[textworld]')")

from slateboard_eval.envs.textworld import (
    CI_GAMES,
    DEFAULT_SEED,
    FULL_GAMES,
    GameFile,
    GameSpec,
    game_set,
    generate_games,
)

SUFFIXES = (".z8", ".json", ".ni")


def test_the_ci_set_has_one_game_of_each_challenge(tw_games: list[GameFile]) -> None:
    assert [g.spec for g in tw_games] == list(CI_GAMES)
    assert len({g.spec.challenge for g in tw_games}) == 4
    for game in tw_games:
        assert game.name == f"{game.spec.label}-s{DEFAULT_SEED}"
        for suffix in SUFFIXES:
            assert game.path.with_suffix(suffix).stat().st_size > 0, (game.name, suffix)
        assert game.walkthrough >= 1 and game.max_score >= 1
        # A Z-machine version 8 story file, with the serial number fixed (not the compile date).
        header = game.path.read_bytes()[:0x18]
        assert header[0] == 8 and header[0x12:0x18] == b"000000"


def test_same_seed_same_files(tw_games: list[GameFile], tmp_path: Path) -> None:
    # Another process, alone (not after other games), into another directory: the same bytes.
    original = tw_games[1]  # treasure hunter: the quickest to make
    again = generate_games([original.spec], seed=DEFAULT_SEED, cache_dir=tmp_path)
    assert again[0].path != original.path
    for suffix in SUFFIXES:
        assert again[0].path.with_suffix(suffix).read_bytes() == original.path.with_suffix(suffix).read_bytes(), suffix
    assert (again[0].walkthrough, again[0].max_score) == (original.walkthrough, original.max_score)


def test_a_cached_game_is_reused_and_a_changed_spec_is_not(tw_games: list[GameFile], tw_cache: Path) -> None:
    stamps = {g.name: g.path.stat().st_mtime_ns for g in tw_games}
    reused = generate_games(game_set(), seed=DEFAULT_SEED, cache_dir=tw_cache)
    assert [g.path for g in reused] == [g.path for g in tw_games]
    assert {g.name: g.path.stat().st_mtime_ns for g in reused} == stamps
    # Same file name, other arguments: the metadata does not match, so it would be regenerated.
    from slateboard_eval.envs.textworld import _cached, textworld_version

    changed = GameSpec(tw_games[0].spec.challenge, ("--level", "6"), tw_games[0].spec.label)
    assert _cached(changed, DEFAULT_SEED, tw_games[0].path, textworld_version()) is None
    assert _cached(tw_games[0].spec, DEFAULT_SEED, tw_games[0].path, textworld_version()) == tw_games[0]


def test_game_sets_and_their_bounds() -> None:
    assert game_set() == list(CI_GAMES) and game_set(full=True) == list(FULL_GAMES)
    assert len(FULL_GAMES) > len(CI_GAMES) and len({s.label for s in FULL_GAMES}) == len(FULL_GAMES)
    assert game_set(games=2) == list(CI_GAMES[:2])
    with pytest.raises(ValueError, match="must be >= 1"):
        game_set(games=0)
    with pytest.raises(ValueError, match=r"CI game set has 4 games, 5 asked"):
        game_set(games=5)


def test_an_unknown_challenge_is_reported_with_its_name(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"could not generate nope-s1 \(tw-nope\).*unknown TextWorld challenge"):
        generate_games([GameSpec("tw-nope", (), "nope")], seed=1, cache_dir=tmp_path)
