"""The real in-process local model (SmolLM2-135M via llama.cpp) driving an LLM worker with
contract-constrained decoding: at least one proposal the kernel accepts."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time

import pytest
from workers_testkit import notes_blueprint

from slateboard.kernel import Kernel
from slateboard.models import resolve_model
from slateboard.views import kernel_view
from slateboard.workers import LLMWorker
from slateboard.workers.constrain import PATCH_KEY


def _llama_import_problem() -> str | None:
    """Why llama_cpp cannot be imported, probed in a subprocess (a broken native build can kill
    the importing process, e.g. with SIGILL), or None when it imports."""
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama_cpp cannot be imported: llama-cpp-python is not installed (pip install 'slateboard[local]')"
    probe = subprocess.run(
        [sys.executable, "-c", "import llama_cpp"], capture_output=True, text=True, timeout=120, check=False
    )
    if probe.returncode != 0:
        tail = (probe.stderr.strip().splitlines() or [f"exit status {probe.returncode}"])[-1]
        return f"llama_cpp cannot be imported (exit status {probe.returncode}): {tail}"
    return None


_REASON = _llama_import_problem()
if _REASON is not None:
    print(_REASON)
pytestmark = pytest.mark.skipif(_REASON is not None, reason=_REASON or "")


async def test_local_model_proposes_an_accepted_note_with_constrained_decoding() -> None:
    bp = notes_blueprint()
    kernel = Kernel(bp)
    model = resolve_model("local")
    worker = LLMWorker(bp, "scribe", model, state=lambda: kernel.state, max_tokens=128, timeout=240)
    started = time.perf_counter()
    outcomes = []
    for _ in range(3):
        view = kernel_view(kernel, "scribe")
        reply = await worker.propose(view)
        assert reply.diagnostics["decoding"] == "contract"
        assert reply.error is None, reply.error
        assert reply.usage.tokens_in > 0 and reply.usage.tokens_out > 0 and reply.usage.component == "worker"
        decision = kernel.submit(reply.to_proposal(view))
        outcomes.append((decision.stage, decision.reason, reply.raw))
        if decision.accepted:
            break
    elapsed = time.perf_counter() - started
    assert any(stage is None for stage, _, _ in outcomes), outcomes
    notes = kernel.state["notes"]
    assert notes and notes[0]["author"] == "scribe" and notes[0]["text"]
    assert PATCH_KEY in (outcomes[-1][2] or "")
    print(f"local model: {len(outcomes)} invocation(s), {elapsed:.1f}s, note {notes[0]['text']!r}")
