"""Fixtures for the ScienceWorld / TextWorldExpress suites: skip (with the reason printed by
``-ra``) when the package or Java is missing, so the rest of the suite still runs."""

from __future__ import annotations

import pytest


@pytest.fixture
def twx_ready() -> None:
    """Skip unless TextWorldExpress and Java can run here."""
    from slateboard_eval.envs.twx import twx_missing

    why = twx_missing()
    if why is not None:
        pytest.skip(f"TextWorldExpress cannot run: {why}")


@pytest.fixture
def sw_ready() -> None:
    """Skip unless ScienceWorld and Java can run here."""
    from slateboard_eval.envs.scienceworld import scienceworld_missing

    why = scienceworld_missing()
    if why is not None:
        pytest.skip(f"ScienceWorld cannot run: {why}")


@pytest.fixture
def peers_ready() -> None:
    """Skip unless the peer systems (LangGraph, loomflow) are installed."""
    from slateboard_eval.textworld_peers import missing_peer

    for peer in ("langgraph", "loomflow"):
        why = missing_peer(peer)
        if why is not None:
            pytest.skip(why)
