"""``import slateboard`` loads no heavy optional dependency: those load on first use.

A fresh interpreter imports the package and reports which of the listed top-level modules
ended up in ``sys.modules``. The CEL package is the subtle one: its ``__init__`` imports its
own REPL (``cel.cli``, through prompt_toolkit and pygments), so ``slateboard.kernel.cel``
imports it only when an expression is compiled or a context is built. (pygments is not
listed: httpx, a core dependency, imports its own CLI, ``httpx._main``, with rich and pygments
whenever they are installed.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = ("cel", "prompt_toolkit", "numpy", "matplotlib", "textworld", "llama_cpp", "scienceworld", "genai_prices")

_PROBE = """
import json, sys
import slateboard
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""

_SRC = str(Path(__file__).resolve().parents[1] / "src")


def _loaded_after(code: str) -> list[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([_SRC, env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, timeout=120)
    loaded: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


def test_import_slateboard_loads_no_heavy_optional_dependency() -> None:
    assert _loaded_after(_PROBE.format(heavy=HEAVY)) == []


def test_cel_loads_on_first_compile_and_still_works() -> None:
    code = _PROBE.format(heavy=("cel",)).replace(
        "import slateboard\n",
        "import slateboard\n"
        "from slateboard.kernel.cel import compile_cel\n"
        "assert 'cel' not in sys.modules\n"
        "assert compile_cel('x + 1 == 3').test({'x': 2}).value is True\n",
    )
    assert _loaded_after(code) == ["cel"]
