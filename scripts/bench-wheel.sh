#!/usr/bin/env bash
# The compiled wheel against the pure (editable) install and LangGraph, on benchmarks/peers.py:
# builds the compiled wheel (hatch_build.py) into its own virtualenv (build/bench-wheel/venv),
# runs the slateboard systems there and in the development install, and LangGraph + SqliteSaver
# (durability="sync") in the development install, then prints wall and CPU ratios.
#   N=1000 ROUNDS=3 scripts/bench-wheel.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-.venv/bin/python}
N=${N:-1000}
ROUNDS=${ROUNDS:-3}
WORK=$ROOT/build/bench-wheel
SYSTEMS="slateboard runner memory,slateboard runner sqlite"
mkdir -p "$WORK/dist" "$WORK/runs"
rm -f "$WORK"/dist/*.whl "$WORK"/runs/*.json
env -u SLATEBOARD_BUILD_PURE "$PY" -m pip wheel --quiet --no-deps -w "$WORK/dist" .
[ -x "$WORK/venv/bin/python" ] || "$PY" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install --quiet --force-reinstall "$WORK"/dist/slateboard-*.whl
# interleaved rounds, each system in a fresh process (peers.py does that)
for round in $(seq 1 "$ROUNDS"); do
  (cd / && env -u PYTHONPATH "$WORK/venv/bin/python" "$ROOT/benchmarks/peers.py" --n "$N" --systems "$SYSTEMS" --json) \
    >"$WORK/runs/compiled-$round.json"
  "$PY" benchmarks/peers.py --n "$N" --systems "$SYSTEMS,langgraph sqlitesaver sync" --json >"$WORK/runs/pure-$round.json"
done
"$PY" - "$WORK/runs" <<'EOF'
import json, statistics, sys
from pathlib import Path

rows: dict[str, list[dict]] = {}
for f in sorted(Path(sys.argv[1]).glob("*.json")):
    build = f.stem.split("-")[0]
    for r in json.loads(f.read_text())["results"]:
        name = r["system"] if r["system"].startswith("langgraph") else f"{r['system']} ({build})"
        rows.setdefault(name, []).append(r)
med = {k: (statistics.median(r["ms_per_step"] for r in v), statistics.median(r["cpu_ms_per_step"] for r in v))
       for k, v in rows.items()}
lg = med.get("langgraph sqlitesaver sync")
print(f"{'system':<42} {'ms/step':>8} {'CPU ms':>8} {'vs pure wall':>13} {'vs pure CPU':>12} {'vs LG wall':>11} {'vs LG CPU':>10}")
for name, (wall, cpu) in sorted(med.items()):
    pure = med.get(name.replace("(compiled)", "(pure)")) if name != "langgraph sqlitesaver sync" else None
    vp = f"{wall / pure[0]:>13.2f} {cpu / pure[1]:>12.2f}" if pure else f"{'':>13} {'':>12}"
    vl = f"{wall / lg[0]:>11.2f} {cpu / lg[1]:>10.2f}" if lg else ""
    print(f"{name:<42} {wall:>8.2f} {cpu:>8.2f} {vp} {vl}")
EOF
