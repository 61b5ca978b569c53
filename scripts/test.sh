#!/usr/bin/env bash
# Set up (scripts/setup.sh), make sure the local PostgreSQL answers, then run the linters and
# the whole test suite in one pytest call. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

# The PostgreSQL tests use a real server on 127.0.0.1:5432; start it if it is down.
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  if command -v pg_ctlcluster >/dev/null 2>&1; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
  fi
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi
export SLATEBOARD_TEST_PG="${SLATEBOARD_TEST_PG:-postgresql://postgres@127.0.0.1:5432/test}"

# The dashboard's browser tests (tests/web) drive Debian's Chromium through Playwright; install it
# when it is missing (the package index is refreshed only when the install needs it).
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends chromium >/dev/null; } \
      || echo "warning: could not install chromium: the dashboard's browser tests will be skipped" >&2
  else
    echo "note: /usr/bin/chromium is missing (apt-get install chromium): the browser tests will be skipped" >&2
  fi
fi

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

.venv/bin/ruff check src tests eval benchmarks examples
.venv/bin/ruff format --check src tests eval benchmarks examples
.venv/bin/mypy
# The tests (issue 35), in a run of their own. pytest imports each test folder's modules as top-level
# modules with that folder on sys.path; mypy does the same for the files it is given, so
# `from cli_testkit import ...` resolves as it does under pytest. Bodies are checked as strictly as
# src (strict: check_untyped_defs, warn_return_any, no implicit Any generics ...), but a test or
# fixture may leave its signature unannotated (pytest supplies its arguments): --allow-untyped-defs
# and --allow-untyped-calls; a partly annotated one must still be complete. Their own cache: these
# options differ from src's, and one shared cache would be rebuilt on every alternate run.
TESTS_MYPY=(.venv/bin/mypy --allow-untyped-defs --allow-untyped-calls --cache-dir .mypy_cache/tests)
"${TESTS_MYPY[@]}" --exclude '(^|/)conftest\.py$' tests
# Every conftest.py is the module `conftest`, so each is checked alone, with every test folder importable.
for conftest in tests/*/conftest.py; do
  MYPYPATH="$(printf '%s:' tests tests/*/)" "${TESTS_MYPY[@]}" "$conftest"
done
# The reference site (mkdocs.yml) into site/ (ignored): a broken link or an undocumented public name fails it.
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict  # not -q: it hides the warnings that --strict counts
# Many tests start slateboard in a subprocess; with PYTHONDONTWRITEBYTECODE set (as on CI) each
# would compile every source again, so write the bytecode once (ignored by git).
.venv/bin/python -m compileall -q src eval/src >/dev/null
# `scripts/test.sh --fast` leaves out the tests marked slow (the local model, wheel builds,
# subprocess pipelines) for the inner loop; CI runs everything.
if [ "${1:-}" = "--fast" ]; then
  shift
  set -- -m "not slow" "$@"
fi
.venv/bin/pytest -q "$@"
