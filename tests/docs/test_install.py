"""The README's install path, end to end, as a library user takes it: a wheel of the project,
installed with its `[local]` extra into a fresh venv made without pip, the weights fetched with
that venv's own Python (the code path that needs no pip), and the quick start's team run there.

The wheel is built with the shared venv's pip (`pip wheel --no-deps`) and installed into the new
venv with `pip --python VENV/bin/python install` (pip >= 22.3); the venv itself never has pip.
`$SLATEBOARD_WEIGHTS_DIR` points at a folder holding a link to the GGUF already on this machine,
so nothing is downloaded from the model's wheel."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PIP = Path(sys.executable).parent / "pip"
TIMEOUT_S = 1200


def _gguf() -> Path | None:
    from slateboard.models.weights import default_weights

    return default_weights()


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0, f"{args} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.mark.slow
def test_a_wheel_in_a_venv_without_pip_runs_the_quick_start(tmp_path: Path) -> None:
    gguf = _gguf()
    if gguf is None:
        pytest.skip("the local model's GGUF is not on this machine (python -m slateboard.models.fetch_weights)")
    started, cpu = time.perf_counter(), os.times()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLATEBOARD_", "PYTHON", "VIRTUAL_ENV"))}
    wheels = tmp_path / "wheels"
    # The pure wheel: tests/test_wheel.py covers the compiled one (its mypyc build takes minutes).
    pure = {**env, "SLATEBOARD_BUILD_PURE": "1"}
    _run([str(PIP), "wheel", "--no-deps", "--quiet", "-w", str(wheels), str(ROOT)], pure, tmp_path)
    (wheel,) = wheels.glob("slateboard-*.whl")

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], env, tmp_path)
    python = venv / "bin" / "python"
    assert subprocess.run([python, "-c", "import pip"], capture_output=True, check=False).returncode != 0
    _run([str(PIP), "--python", str(python), "install", "--quiet", f"{wheel}[local]"], env, tmp_path)

    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / gguf.name).symlink_to(gguf)
    env["SLATEBOARD_WEIGHTS_DIR"] = str(weights)
    env["SLATEBOARD_STORE"] = f"sqlite:///{tmp_path / 'boards.db'}"
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    fetched = _run([str(python), "-m", "slateboard.models.fetch_weights"], env, tmp_path)
    assert Path(fetched.stdout.strip()).resolve() == gguf.resolve()

    # the installed package, not this checkout, answers
    where = _run([str(python), "-c", "import slateboard; print(slateboard.__file__)"], env, tmp_path)
    assert where.stdout.strip().startswith(str(venv)), where.stdout

    task = "Why did retention drop in March?"
    done = _run([str(venv / "bin" / "slateboard"), "run", "retention", "--task", task], env, tmp_path)
    assert "Answer: " in done.stdout and "basic_price" in done.stdout, done.stdout[-3000:]
    wall = time.perf_counter() - started
    after = os.times()
    child_cpu = (after.children_user - cpu.children_user) + (after.children_system - cpu.children_system)
    print(f"wheel -> venv without pip -> weights -> quick start: wall {wall:.1f} s, CPU (children) {child_cpu:.1f} s")


def _setup_cmake_args() -> str:
    import re

    found = re.search(r'export CMAKE_ARGS="\$\{CMAKE_ARGS:-(.*?)\}"', (ROOT / "scripts" / "setup.sh").read_text())
    assert found is not None, "scripts/setup.sh lost its CMAKE_ARGS line"
    return found.group(1)


@pytest.mark.parametrize("page", ["README.md", "docs/install.md"])
def test_the_install_pages_show_the_lean_llama_cpp_build_of_setup_sh(page: str) -> None:
    # issue 48: without these flags `pip install ".[local]"` compiled for over 15 minutes
    text = (ROOT / page).read_text(encoding="utf-8")
    assert f'export CMAKE_ARGS="{_setup_cmake_args()}"' in text
    assert text.index("export CMAKE_ARGS=") < text.index('pip install ".[local]"', text.index("export CMAKE_ARGS="))
