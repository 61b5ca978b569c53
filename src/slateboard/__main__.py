"""``python -m slateboard ...``: the ``slateboard`` command (see ``slateboard.cli``)."""

from .cli import main

if __name__ == "__main__":
    main()
