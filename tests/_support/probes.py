"""Probes that decide whether tests needing an optional native piece can run here."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from functools import cache


@cache
def local_model_problem() -> str | None:
    """Why the embedded local model cannot run here, or None when it can: llama_cpp imports and
    the default weights are installed. Probed once, in a subprocess, because a broken native
    build can kill the importing process."""
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama_cpp is not installed (pip install 'slateboard[local]')"
    probe = subprocess.run(
        [sys.executable, "-c", "import llama_cpp; from slateboard.models.local import default_weights_path as d; d()"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if probe.returncode != 0:
        tail = (probe.stderr.strip().splitlines() or [f"exit status {probe.returncode}"])[-1]
        return f"the local model cannot be loaded (exit status {probe.returncode}): {tail}"
    return None
