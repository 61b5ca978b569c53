"""Time per step for the scale benchmark, on either engine, from two clocks it can read honestly.

The store's records carry no timestamps, so the benchmark makes its own, on one machine's wall
clock (``time.time()``, shared by every process):

* **model calls**: the scripted model appends ``{task, worker, start, end}`` for each call to a
  JSON-lines file per worker process (``CallTrace``, enabled by $SLATEBOARD_BENCH_TRACE);
* **commits**: worker processes run the CLI through ``stamped_cli``, which prefixes every stdout
  line with the time it was written; both engines print one ``commit board=... seq=...
  worker=... invocation=... version=...`` line right after the record is in the store.

Within a board, the k-th call of a worker is the k-th commit of that worker (a rejected
proposal is a record too, and is retried by another call); a (board, worker) whose counts differ
(a retried activity, a call whose commit was dropped) is left out and counted (``unmatched``).
Per model call, in ms:

* ``post``: the call's end to its commit in the store (deciding, appending; on Temporal also the
  round trips through the server from the propose activity to the commit activity);
* ``engine``: ``post`` plus the time from the board's latest commit before the call to the
  call's start (planning, claiming, queueing for a slot): the time the engine adds around one
  model call. On Temporal, where a board runs one step at a time, it is exactly the step's time
  minus its model call; with runner processes, whose a and b run side by side, the latest commit
  may be the sibling's, so it can read lower than the step's own wait;
* ``scheduled``: from the commit that scheduled the invocation (the scheduler names an
  invocation ``v<version>.<n>`` after the version whose commit scheduled it) to its own commit,
  minus the model call: how long the invocation waited beyond its model call, queueing included
  (on Temporal, a writer's invocation also waits for its sibling's step: one step at a time).

Calls of invocations scheduled at the board's start (``v0.*``) have ``post`` only: what precedes
them is the submission burst.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

__all__ = ["TRACE_ENV", "Call", "CallTrace", "Commit", "percentiles", "read_calls", "read_commits", "stamped_cli",
           "step_figures"]  # fmt: skip

TRACE_ENV = "SLATEBOARD_BENCH_TRACE"
COMMIT_LINE = re.compile(
    r"^(\d+\.\d+) commit board=(\S+) seq=(\d+) worker=(\S+) invocation=(\S+) (\w+)\S* version=(\d+)"
)
SCHEDULED = re.compile(r"^v(\d+)\.\d+$")


@dataclass(frozen=True)
class Call:
    """One model call: the board's task number, the worker, wall-clock start and end."""

    task: int
    worker: str
    start: float
    end: float


@dataclass(frozen=True)
class Commit:
    """One commit line of a worker process: when it was written, the record and its invocation."""

    at: float
    board: str
    seq: int
    worker: str
    invocation: str
    outcome: str
    version: int


class CallTrace:
    """Appends one JSON line per model call to ``$SLATEBOARD_BENCH_TRACE/calls-<pid>.jsonl``;
    does nothing when the variable is unset (a model used outside the benchmark)."""

    def __init__(self) -> None:
        self._file: IO[str] | None = None
        self._pid = -1

    def record(self, task: int | None, worker: str, start: float, end: float) -> None:
        """Note one call (``task`` None: the task was not found in the messages; not noted)."""
        where = os.environ.get(TRACE_ENV)
        if not where or task is None:
            return
        if self._file is None or self._pid != os.getpid():
            self._pid = os.getpid()
            # Held open for the process's life (line-buffered): one write per call, closed at exit.
            self._file = Path(where, f"calls-{self._pid}.jsonl").open("a", encoding="utf-8", buffering=1)  # noqa: SIM115
        self._file.write(json.dumps({"task": task, "worker": worker, "start": start, "end": end}) + "\n")


class _Stamped(io.TextIOBase):
    """A text stream that writes each complete line to ``raw`` prefixed with ``time.time()``."""

    def __init__(self, raw: io.TextIOBase | IO[str]) -> None:
        self._raw = raw
        self._pending = ""

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self._raw, "encoding", "utf-8"))

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._raw.fileno()

    def write(self, s: str) -> int:
        self._pending += s
        while "\n" in self._pending:
            line, self._pending = self._pending.split("\n", 1)
            self._raw.write(f"{time.time():.6f} {line}\n")
        return len(s)

    def flush(self) -> None:
        self._raw.flush()


def stamped_cli() -> None:
    """Run slateboard's CLI (``sys.argv[1:]``) with every stdout line time-stamped."""
    from slateboard.cli import main

    sys.stdout = _Stamped(sys.stdout)
    main()


def read_calls(folder: Path) -> list[Call]:
    """Every call the worker processes noted under ``folder``."""
    calls: list[Call] = []
    for path in sorted(folder.glob("calls-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                d = json.loads(line)
                calls.append(Call(int(d["task"]), str(d["worker"]), float(d["start"]), float(d["end"])))
    return calls


def read_commits(logs: Iterable[Path]) -> list[Commit]:
    """Every commit line of the worker processes' logs."""
    found: list[Commit] = []
    for log in logs:
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            m = COMMIT_LINE.match(line)
            if m:
                found.append(Commit(float(m[1]), m[2], int(m[3]), m[4], m[5], m[6], int(m[7])))
    return found


def percentiles(values: Sequence[float]) -> dict[str, float | None]:
    """p50, p99 (nearest rank) and mean of ``values``; None each when there are none."""
    if not values:
        return {"p50": None, "p99": None, "mean": None}
    ordered = sorted(values)

    def rank(p: float) -> float:
        return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]

    return {"p50": rank(50), "p99": rank(99), "mean": sum(ordered) / len(ordered)}


def step_figures(board_of_task: Mapping[int, str], calls: Sequence[Call], commits: Sequence[Commit]) -> dict[str, Any]:
    """Per-call times in ms (see the module docstring): ``engine``, ``post``, ``scheduled`` and
    the model's own ``model`` time, each p50/p99/mean; ``steps`` (calls with an ``engine``
    figure); ``calls_per_board``; ``unmatched`` (board, worker) pairs left out."""
    by_call: dict[tuple[str, str], list[Call]] = defaultdict(list)
    ours = [c for c in calls if c.task in board_of_task]  # a trace may hold calls of other runs' boards
    for c in ours:
        by_call[(board_of_task[c.task], c.worker)].append(c)
    by_commit: dict[tuple[str, str], list[Commit]] = defaultdict(list)
    board_commits: dict[str, list[float]] = defaultdict(list)
    made_version: dict[tuple[str, int], float] = {}
    for m in commits:
        by_commit[(m.board, m.worker)].append(m)
        board_commits[m.board].append(m.at)
        if m.outcome == "accepted":
            made_version[(m.board, m.version)] = m.at
    for times in board_commits.values():
        times.sort()
    figures: dict[str, list[float]] = {"engine": [], "post": [], "scheduled": [], "model": []}
    unmatched = 0
    for key in sorted(set(by_call) | set(by_commit)):
        mine = sorted(by_call.get(key, []), key=lambda c: c.start)
        done = sorted(by_commit.get(key, []), key=lambda m: m.seq)
        if len(mine) != len(done):
            unmatched += 1
            continue
        for call, commit in zip(mine, done, strict=True):
            model = call.end - call.start
            post = commit.at - call.end
            figures["model"].append(model * 1000)
            figures["post"].append(post * 1000)
            scheduled_at = SCHEDULED.match(commit.invocation)
            version = int(scheduled_at[1]) if scheduled_at else 0
            if version < 1:
                continue  # scheduled at the board's start: the submission burst precedes it
            before = [t for t in board_commits[commit.board] if t <= call.start]
            if before:
                figures["engine"].append((call.start - before[-1] + post) * 1000)
            trigger = made_version.get((commit.board, version))
            if trigger is not None:
                figures["scheduled"].append((commit.at - trigger - model) * 1000)
    return {
        "steps": len(figures["engine"]),
        "calls": len(ours),
        "calls_per_board": len(ours) / max(len(board_of_task), 1),
        "unmatched": unmatched,
        **{f"{name}_ms": percentiles(values) for name, values in figures.items()},
    }
