"""Running the fenced code blocks of a Markdown document as tests (README.md: tests/test_readme.py;
docs/*.md: tests/docs/test_docs_examples.py), one test case per block, named by its heading and
its position under it, so a failing case names the block.

* ``python`` blocks run as a script (``sys.executable``);
* ``bash``/``sh``/``shell`` blocks run command by command (``bash -c``; a trailing ``\\`` joins
  lines; ``console`` blocks: only the ``$ `` lines), each command must exit 0;
* ``yaml``/``yml`` blocks are loaded, and a blueprint (a mapping with ``schema`` and
  ``workers``) must be accepted by ``compile_blueprint``; ``json`` blocks are loaded;
* other blocks (``text``...) are not code and are not collected.

Every case runs in a fresh directory that looks like the repository root (its top-level entries
are symlinked in, so ``examples/...`` and ``.venv/bin/...`` resolve) with ``.venv/bin`` first on
PATH, a store of its own (``$SLATEBOARD_STORE``, a SQLite file in that directory) and its own
user data directory. The word ``BOARD`` in a command stands for the newest board of that store
(what the previous commands created).

HTML comments right before a block steer it (invisible in the rendered page); ``readme-test:``
and ``doc-test:`` are the same prefix:

* ``<!-- doc-test: skip REASON -->``: not run; the reason is the skip message. Keep these to
  commands that cannot run inside the test suite (installs, the suite itself, servers).
* ``<!-- doc-test: file NAME -->``: the block is also written to NAME in every case's directory
  of the same document (e.g. the blueprint later blocks load).
* ``<!-- doc-test: slow -->``: the case is marked ``slow`` (it runs the local model).
* ``<!-- doc-test: variant REASON`` then lines ``replace: OLD`` / ``with: NEW`` (repeatable),
  then ``-->``: the block runs with these substitutions (each of the first occurrence of OLD,
  in order), e.g. a scripted model or fewer iterations in place of a slow run. Each OLD must
  occur in the block, so the document and its variant cannot drift apart silently.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from slateboard.blueprint import compile_blueprint

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
COMMAND_TIMEOUT_S = 300  # a long-running command (a server) fails instead of hanging the suite

_FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)\s*$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_MARKER = re.compile(r"<!--\s*(?:readme|doc)-test:\s*(.*?)-->", re.S)
_BOARD = re.compile(r"\bBOARD\b")
SHELLS = {"bash", "sh", "shell", "console"}
YAMLS = {"yaml", "yml"}
RUNNABLE = {"python", "py", "json", *SHELLS, *YAMLS}


@dataclass
class Block:
    """One fenced block of a document and the markers placed before it."""

    heading: str
    index: int
    lang: str
    text: str
    line: int
    source: str = "README"
    skip: str | None = None
    file: str | None = None
    slow: bool = False
    replacements: list[tuple[str, str]] = field(default_factory=list)
    variant: str | None = None

    @property
    def id(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.heading.lower()).strip("-") or "top"
        return f"{slug}-{self.index}-{self.lang}"

    @property
    def where(self) -> str:
        """``SOURCE line N``, for messages."""
        return f"{self.source} line {self.line}"

    def code(self) -> str:
        """The block as it runs: with the variant's substitutions applied."""
        text = self.text
        for old, new in self.replacements:
            assert old in text, f"{self.where}: variant text {old!r} is not in the block"
            text = text.replace(old, new, 1)
        return text


def _apply_marker(block: Block, marker: str) -> None:
    keyword, _, rest = marker.strip().partition(" ")
    if keyword == "skip":
        block.skip = rest.strip() or "no reason given"
    elif keyword == "file":
        block.file = rest.strip()
    elif keyword == "slow":
        block.slow = True
    elif keyword == "variant":
        reason, _, body = rest.partition("\n")
        block.variant = reason.strip()
        old: str | None = None
        for line in body.splitlines():
            if line.startswith("replace: "):
                old = line[len("replace: ") :]
            elif line.startswith("with: ") and old is not None:
                block.replacements.append((old, line[len("with: ") :]))
                old = None
            elif line.strip():
                raise ValueError(f"{block.where}: bad variant line {line!r}")
        if not block.replacements:
            raise ValueError(f"{block.where}: a variant needs replace:/with: lines")
    else:
        raise ValueError(f"{block.where}: unknown doc-test marker {keyword!r}")


def parse_blocks(text: str, source: str = "README") -> list[Block]:
    """The fenced blocks of ``text`` with their headings and markers; ``source`` names the
    document in messages."""
    lines = text.splitlines()
    blocks: list[Block] = []
    counts: dict[str, int] = {}
    heading = "top"
    pending: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            marker, lang = fence.group(1), (fence.group(2) or "").lower()
            body: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].startswith(marker):
                body.append(lines[i])
                i += 1
            counts[heading] = counts.get(heading, 0) + 1
            block = Block(heading, counts[heading], lang or "text", "\n".join(body) + "\n", i - len(body), source)
            for m in pending:
                _apply_marker(block, m)
            pending = []
            blocks.append(block)
            i += 1
            continue
        head = _HEADING.match(line)
        if head:
            heading, pending = head.group(2), []
        elif line.lstrip().startswith("<!--"):
            comment = [line]
            while "-->" not in comment[-1] and i + 1 < len(lines):
                i += 1
                comment.append(lines[i])
            found = _MARKER.search("\n".join(comment))
            if found:
                pending.append(found.group(1))
        elif line.strip():
            pending = []  # markers only apply to the block right after them
        i += 1
    return blocks


def runnable(blocks: list[Block]) -> list[Block]:
    """The blocks that are code (the test cases)."""
    return [b for b in blocks if b.lang in RUNNABLE]


def params(cases: list[Block], prefix: str = "") -> list[Any]:
    """``pytest.param`` per case, marked ``slow`` where the document says so."""
    return [pytest.param(b, id=f"{prefix}{b.id}", marks=[pytest.mark.slow] if b.slow else []) for b in cases]


# -- running ---------------------------------------------------------------------------------------
def _workdir(tmp: Path, blocks: list[Block], hide: str) -> Path:
    """A directory that looks like the repository root, with every ``file`` block written in."""
    work = tmp / "repo"
    work.mkdir()
    for entry in ROOT.iterdir():
        if entry.name in (".git", hide) or entry.name.startswith(".pytest"):
            continue
        (work / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    for b in blocks:
        if b.file:
            (work / b.file).write_text(b.code(), encoding="utf-8")
    return work


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLATEBOARD_")}
    env["SLATEBOARD_STORE"] = f"sqlite:///{tmp / 'store.db'}"
    env["XDG_DATA_HOME"] = str(tmp / "data")
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def commands(block: Block, code: str) -> list[str]:
    """The commands of a shell block: continuation lines joined; comments and, in a console
    block, output lines left out."""
    found: list[str] = []
    current = ""
    for raw in code.splitlines():
        line = raw.rstrip()
        if block.lang == "console" and not current:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        found.append(current + line)
        current = ""
    if current:
        found.append(current)
    return found


def _newest_board(env: dict[str, str]) -> str:
    from slateboard.stores import open_store

    async def newest() -> str | None:
        store = await open_store(env["SLATEBOARD_STORE"])
        try:
            boards = await store.list_boards()
        finally:
            await store.close()
        return boards[-1].board_id if boards else None

    found = asyncio.run(newest())
    assert found is not None, "the command names BOARD, but no board was created before it"
    return found


def _run(args: list[str], work: Path, env: dict[str, str], what: str) -> str:
    done = subprocess.run(
        args, cwd=work, env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
    )
    assert done.returncode == 0, (
        f"{what} exited {done.returncode}\n--- stdout (tail)\n{done.stdout[-3000:]}\n--- stderr (tail)\n"
        f"{done.stderr[-3000:]}"
    )
    return done.stdout


def run_block(block: Block, blocks: list[Block], tmp_path: Path, *, hide: str = "README.md") -> list[str]:
    """Run one case (see the module docstring); ``blocks`` are all the blocks of its document
    (for ``file`` blocks), ``hide`` a top-level entry of the repository not linked into the case's
    directory. Returns the stdout of each command or script it ran."""
    if block.skip:
        pytest.skip(f"{block.where} ({block.id}): {block.skip}")
    code = block.code()
    if block.lang in YAMLS:
        data = yaml.safe_load(code)
        if isinstance(data, dict) and "schema" in data and "workers" in data:
            compile_blueprint(data, source_label=block.where)
        return []
    if block.lang == "json":
        json.loads(code)
        return []
    work = _workdir(tmp_path, blocks, hide)
    env = _env(tmp_path)
    if block.lang in ("python", "py"):
        script = work / "doc_block.py"
        script.write_text(code, encoding="utf-8")
        return [_run([sys.executable, str(script)], work, env, f"python block at {block.where}")]
    bash = shutil.which("bash")
    assert bash is not None, "bash is needed to run the shell blocks"
    found = commands(block, code)
    assert found, f"{block.where}: a shell block without commands"
    outputs: list[str] = []
    for command in found:
        if _BOARD.search(command):
            command = _BOARD.sub(_newest_board(env), command)
        outputs.append(_run([bash, "-c", command], work, env, f"{block.where}: {command!r}"))
    return outputs
