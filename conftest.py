"""One pytest call tests both distributions of this repository: the core (tests/) and
slateboard-eval (eval/tests/).

scripts/setup.sh installs slateboard-eval editable. Where it is not installed (a virtual
environment made before eval/ existed), its source tree goes on ``sys.path`` and on
``PYTHONPATH``, so the tests and the subprocesses they start (``slateboard faults``,
``python -m slateboard_eval.envs._twmake``) import this checkout's copy.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

EVAL_SRC = Path(__file__).resolve().parent / "eval" / "src"

if importlib.util.find_spec("slateboard_eval") is None:
    sys.path.insert(0, str(EVAL_SRC))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(EVAL_SRC), os.environ.get("PYTHONPATH")) if p)
