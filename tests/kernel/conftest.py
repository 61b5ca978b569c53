"""Fixtures for the kernel test suite.

Hypothesis: the profiles live in ``kernel_testkit`` and are selected with
``SLATEBOARD_KERNEL_HYPOTHESIS``:

* ``kernel-ci`` (default): derandomized (the same examples every run), no example database,
  no deadline, no shrinking (a failure is reported at once, reproducibly);
* ``kernel-debug``: the same examples, shrunk to a minimal failing case;
* ``kernel-thorough``: fresh random examples, 10x as many, shrunk.

Each property test applies them through ``kernel_settings(n)``, so loading them never changes
other packages' hypothesis settings.
"""

from __future__ import annotations

import pytest
from kernel_testkit import claims_blueprint, make_blueprint

from slateboard.blueprint import CompiledBlueprint
from slateboard.kernel import Kernel


@pytest.fixture(scope="session")
def claims_bp() -> CompiledBlueprint:
    """A small board: claims (array of closed objects), notes (string map), secret, count, log."""
    return claims_blueprint()


@pytest.fixture
def claims_kernel(claims_bp: CompiledBlueprint) -> Kernel:
    return Kernel(claims_bp)


@pytest.fixture(scope="session")
def open_bp() -> CompiledBlueprint:
    """Unconstrained object state with default limits and one all-powerful worker."""
    return make_blueprint({"type": "object"}, {})
