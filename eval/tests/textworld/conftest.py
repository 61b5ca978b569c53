"""Fixtures for the TextWorld tests: the CI game set, generated once per test session, offline."""

from __future__ import annotations

from pathlib import Path

import pytest

from slateboard_eval.envs.textworld import DEFAULT_SEED, GameFile, game_set, generate_games


@pytest.fixture(scope="session")
def tw_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache directory private to this test session."""
    return tmp_path_factory.mktemp("tw-games")


@pytest.fixture(scope="session")
def tw_games(tw_cache: Path) -> list[GameFile]:
    """The CI game set (one game of each TextWorld challenge), generated into ``tw_cache``."""
    return generate_games(game_set(), seed=DEFAULT_SEED, cache_dir=tw_cache)
