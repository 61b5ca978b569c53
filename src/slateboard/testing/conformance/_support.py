"""What the conformance tests share: odd texts, the capability skip, meta without the genesis."""

from __future__ import annotations

from typing import Any

import pytest

from ...kernel.record import GENESIS_META
from ...stores import (
    Store,
    supports,
)

UNICODE = [
    "plain",
    "naïve café — “quotes”",
    "日本語のテキスト",
    "עברית ومرحبا",
    "emoji 🧪🚀👩🏽‍🔬",
    "nul \u0000 and controls \u0001\u001f\u007f",
    'line\nbreaks\r\tand \\ backslashes " quotes',
    "\U0010fffd max plane",
]


def sizes(values: list[Any]) -> list[int]:
    return [len(str(v)) for v in values]


def require(store: Store, capability: type) -> None:
    """Skip the calling test (printing why) unless ``store`` declares ``capability``."""
    if not supports(store, capability):
        pytest.skip(f"{type(store).__name__} does not declare the optional capability {capability.__name__}")


def user_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """A board's meta without the genesis binding the built-in stores add (issue 29, R1)."""
    return {k: v for k, v in meta.items() if k != GENESIS_META}
