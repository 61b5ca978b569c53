"""Help texts as a reader sees them (issue 48): docstrings are wrapped for the source, so their
single line breaks are joined (the terminal wraps), reST double backticks become single ones, and
a flag shows no ``<bool>`` type (it takes no value).

``tidy`` rewrites a click command (and its subcommands and options) in place, once; the group
calls it before rendering any help, so every ``--help`` page, core or plugin, reads the same.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

_DOUBLE_TICKS = re.compile(r"``(.+?)``", re.S)
_TIDIED = "_slateboard_help_tidied"


def prose(text: str) -> str:
    """``text`` with each paragraph's lines joined, unless the paragraph is preformatted (click's
    ``\\b`` marker, or indented/bulleted lines after its first), and ``x`` for ````x````."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    out: list[str] = []
    for para in paragraphs:
        lines = para.split("\n")
        keep = para.startswith("\b") or any(
            line[:1].isspace() or line.lstrip()[:2] in ("- ", "* ") for line in lines[1:]
        )
        out.append(para if keep else " ".join(line.strip() for line in lines))
    return _DOUBLE_TICKS.sub(r"`\1`", "\n\n".join(out))


def _no_type_shown(ctx: Any) -> None:
    return None


def _flag(option: Any) -> Any:
    """``--help``, made per context by click: shown without a type, like every other flag."""
    if option is not None:
        option.display_type_rich = _no_type_shown
    return option


def tidy(command: Any) -> Any:
    """Rewrite ``command``'s help, short help and option help texts with ``prose``, hide a flag's
    type, and do the same for its subcommands; returns ``command`` (None passes through)."""
    if command is None or getattr(command, _TIDIED, False):
        return command
    setattr(command, _TIDIED, True)
    for attr in ("help", "short_help"):
        value = getattr(command, attr, None)
        if isinstance(value, str):
            setattr(command, attr, prose(value))
    for param in getattr(command, "params", ()):
        if isinstance(getattr(param, "help", None), str):
            param.help = prose(param.help)
        if getattr(param, "is_flag", False) and hasattr(param, "display_type_rich"):
            # typer shows a flag's annotation (<bool>) in the type column; a flag takes no value
            param.display_type_rich = _no_type_shown
    made = getattr(command, "get_help_option", None)
    if made is not None:
        command.get_help_option = lambda ctx: _flag(made(ctx))
    for sub in getattr(command, "commands", {}).values():
        tidy(sub)
    return command
