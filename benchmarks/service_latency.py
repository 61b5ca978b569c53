"""The service benchmark's model latency: fixed (``--latency-ms``), or drawn around it
(``--jitter J``: uniform in ``[L(1-J), L(1+J)]``, same mean, so the ideal wall is unchanged).

Boards that all start together and wait the same latency answer in waves, and each wave's
replies queue behind one another in the process whatever the framework: the reply-to-commit
p99 then measures the wave, not the step. Real providers' latencies spread; ``--jitter`` makes
the benchmark's spread too. The setting travels to the child processes and the fake server in
``$SB_BENCH_JITTER``; every process draws from the same seeded sequence, so systems compare on
the same draws.
"""

from __future__ import annotations

import os
import random

__all__ = ["JITTER_ENV", "draw"]

JITTER_ENV = "SB_BENCH_JITTER"
_RNG = random.Random(20261129)


def draw(latency_s: float) -> float:
    """One call's latency: ``latency_s``, spread by ``$SB_BENCH_JITTER`` (0 to 1) when set."""
    jitter = min(max(float(os.environ.get(JITTER_ENV) or 0.0), 0.0), 1.0)
    return latency_s if jitter == 0.0 else latency_s * (1.0 + jitter * (2.0 * _RNG.random() - 1.0))
