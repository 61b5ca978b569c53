"""Shared CLI plumbing: options, stores, board ids, blueprints and templates, output."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from ..redaction import redact, register_url_secrets
from ._errors import EXIT_USAGE, CliError

if TYPE_CHECKING:
    from ..blueprint.compile import CompiledBlueprint
    from ..stores.base import BoardInfo, Store

T = TypeVar("T")

STORE_ENV = "SLATEBOARD_STORE"
TENANT_ENV = "SLATEBOARD_TENANT"

StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        envvar=STORE_ENV,
        show_envvar=True,
        metavar="URL",
        help=(
            "Store URL: sqlite:///relative.db, sqlite:////absolute/path.db, postgresql://..., memory://"
            " (default: SQLite in the user data dir)."
        ),
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for machines instead of tables.")]

# The options `run`, `resume` and `submit` share: one definition, so their names, metavars and
# help cannot drift apart between the commands that create or drive a board.
BlueprintArgument = Annotated[
    str,
    typer.Argument(
        metavar="BLUEPRINT_OR_TEMPLATE",
        help="A blueprint file (YAML or JSON) or the name of a template (see: slateboard templates).",
        show_default=False,
    ),
]
TaskOption = Annotated[
    str | None, typer.Option("--task", "-t", help="The task, put into the board's initial state at /task.")
]
InputsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--input",
        "-i",
        metavar="NAME=VALUE",
        help="Put VALUE (JSON, else a string) at /NAME of the initial state; repeatable.",
    ),
]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        metavar="MODEL",
        help="Model for every LLM worker, e.g. local, openai:gpt-4o-mini, groq:llama-3.1-8b-instant.",
    ),
]
ApiKeyEnvOption = Annotated[
    str | None,
    typer.Option(
        "--api-key-env",
        metavar="NAME",
        help="Environment variable holding the API key for --model's endpoint (sent to that host only).",
    ),
]
ParallelOption = Annotated[
    str,
    typer.Option(
        "--parallel",
        "-p",
        metavar="N|auto",
        help="Invocations in flight at once: N, or auto (workers whose contracts cannot conflict run together).",
    ),
]
ControlOption = Annotated[
    str,
    typer.Option("--control", help="Control unit choosing the next invocation: agenda, round-robin or coordinator."),
]
MaxStepsOption = Annotated[
    int | None,
    typer.Option("--max-steps", min=1, help="Stop after this many proposals (default: the blueprint's)."),
]
NameOption = Annotated[str | None, typer.Option("--name", help="The board's name (default: the blueprint's).")]
BoardArgument = Annotated[
    str, typer.Argument(metavar="BOARD", help="A board id (or a unique prefix).", show_default=False)
]
"""The BOARD argument of the commands that act on one stored board (resume, approve, watch, ...)."""


def console_err() -> Console:
    """A console on stderr for progress lines (stdout stays the table or the JSON)."""
    return Console(file=sys.stderr, highlight=False, soft_wrap=True)


PIPED_WIDTH = 100_000
"""The console width when stdout is not a terminal and $COLUMNS is unset: tables are never cut
to 80 columns when piped (``| less``, ``> file``, ``| grep``)."""


def console() -> Console:
    """A console on the current stdout (tests swap stdout, so never cache one); full width when
    piped (PIPED_WIDTH), the terminal's width (or $COLUMNS) otherwise."""
    isatty = getattr(sys.stdout, "isatty", None)
    piped = not (callable(isatty) and isatty()) and not os.environ.get("COLUMNS")
    return Console(file=sys.stdout, highlight=False, soft_wrap=True, width=PIPED_WIDTH if piped else None)


def print_json(data: Any) -> None:
    """Write ``data`` as indented JSON to stdout (plain text: no markup, no wrapping)."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def run_async(make: Callable[[], Awaitable[T]]) -> T:
    """Run the coroutine ``make()`` to completion in a fresh event loop."""

    async def wrapper() -> T:
        return await make()

    return asyncio.run(wrapper())


def store_label(url: str | None) -> str:
    """The store a URL names, for messages (the default SQLite file by its path)."""
    if url:
        return redact(url)
    from ..stores.sqlite import default_path

    return f"sqlite:///{default_path()}"


def store_hint(url: str | None) -> str:
    """`` --store URL`` to repeat in follow-up commands when one was given on the command line
    (not the default, not $SLATEBOARD_STORE), else ``""``."""
    if not url or os.environ.get(STORE_ENV) == url:
        return ""
    # A password is never echoed (issue 29, I8): the hint shows it masked; set the URL in
    # $SLATEBOARD_STORE (then no hint is needed) or give the password through the driver's own
    # variable (PGPASSWORD) to copy the commands as they are.
    return f" --store {redact(url)}"


def store_is_ephemeral(url: str) -> bool:
    """Whether ``url`` names a store that lives in this process's memory only (``memory://``,
    ``sqlite:///:memory:``): no hint may point a later command at it, it is gone by then."""
    from ..stores import in_memory_url

    return in_memory_url(url)


def cli_tenant() -> str | None:
    """The tenant every command acts in: ``--tenant`` (anywhere on the line), else
    $SLATEBOARD_TENANT, else None (the unscoped store: every board)."""
    from ._errors import settings

    return settings.tenant or os.environ.get(TENANT_ENV) or None


@asynccontextmanager
async def opened_store(url: str | None, *, create: bool = True) -> AsyncIterator[Store]:
    """Open the store ``url`` names (None: the default SQLite file) and close it afterwards;
    read-only commands pass ``create=False`` so that a store that does not exist is refused
    (``StoreMissing``), never created. With a tenant (``cli_tenant``) the store is that
    tenant's scope (``stores.tenancy``); a malformed or unknown tenant is a usage error."""
    from ..errors import InvalidInput
    from ..stores import open_store
    from ..stores.tenancy import UnknownTenant

    register_url_secrets([url])  # no error or line this process prints may echo its password
    tenant = cli_tenant()
    try:
        store = await open_store(url, create=create, tenant=tenant)
    except (InvalidInput, UnknownTenant) as exc:
        if tenant is None:
            raise
        text = exc.args[0] if exc.args else str(exc)
        raise CliError(f"--tenant: {text} ({store_label(url)})", code=EXIT_USAGE) from None
    try:
        yield store
    finally:
        await store.close()


async def resolve_board(store: Store, ref: str, url: str | None) -> BoardInfo:
    """The board whose id is ``ref``, or whose id starts with ``ref`` when exactly one does."""
    from ..stores.base import BoardNotFound

    try:
        return await store.board_info(ref)
    except BoardNotFound:
        pass
    matches = [b for b in await store.list_boards() if b.board_id.startswith(ref)] if ref else []
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        ids = ", ".join(b.board_id for b in matches[:5])
        raise CliError(f"board id {ref!r} is ambiguous in {store_label(url)}: it starts {len(matches)} ids ({ids})")
    raise CliError(f"no board {ref!r} in {store_label(url)} (list them with: slateboard boards{store_hint(url)})")


# -- blueprints and templates -------------------------------------------------------------------
def templates_module() -> ModuleType | None:
    """``slateboard.blueprint.templates`` when this installation has it, else None."""
    name = "slateboard.blueprint.templates"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name in (name, "slateboard.blueprint"):
            return None
        raise


def template_entries(module: ModuleType) -> list[tuple[str, str]]:
    """(name, description) of every template (``list_templates()``; descriptions from
    ``template_spec(name)`` when the module has it), sorted by name."""
    names = [str(n) for n in module.list_templates()]
    return sorted((name, _spec_description(module, name)) for name in names)


def _spec_description(module: ModuleType, name: str) -> str:
    """A template's own description (from its spec), or "" when the module cannot tell."""
    spec_of = getattr(module, "template_spec", None)
    try:
        spec = spec_of(name) if callable(spec_of) else None
    except Exception:
        return ""
    desc = spec.get("description") if isinstance(spec, Mapping) else None
    return " ".join(desc.split()) if isinstance(desc, str) else ""


def as_blueprint_json(value: Any) -> dict[str, Any]:
    """The plain JSON form of a CompiledBlueprint, Blueprint, dict, or an object carrying one."""
    from ..blueprint.compile import CompiledBlueprint
    from ..blueprint.models import Blueprint

    if isinstance(value, CompiledBlueprint):
        return value.spec.to_json()
    if isinstance(value, Blueprint):
        return value.to_json()
    if isinstance(value, Mapping):
        return dict(value)
    inner = getattr(value, "blueprint", None)
    if inner is not None and inner is not value:
        return as_blueprint_json(inner)
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        data = to_json()
        if isinstance(data, Mapping):
            return dict(data)
    raise CliError(f"expected a blueprint, got a {type(value).__name__}")


def _looks_like_path(ref: str) -> bool:
    return "/" in ref or "\\" in ref or Path(ref).suffix.lower() in (".yaml", ".yml", ".json")


def load_blueprint_or_template(ref: str) -> tuple[CompiledBlueprint, Path | None]:
    """Accept the blueprint file ``ref`` names, else the template of that name.

    Returns the compiled blueprint and the file it came from (None for a template). Raises
    CliError for a missing file or an unknown template (listing the known ones) and
    BlueprintError (with every issue) for a blueprint that is not accepted.
    """
    from ..blueprint.compile import CompiledBlueprint, compile_blueprint, load_blueprint

    path = Path(ref).expanduser()
    if path.is_file():
        return load_blueprint(path), path.resolve()
    if path.exists():
        raise CliError(f"{ref}: not a file")
    module = templates_module()
    if _looks_like_path(ref):
        raise CliError(f"no such blueprint file: {ref}")
    if module is None:
        raise CliError(f"no such blueprint file: {ref} (and this installation has no templates)")
    known = [name for name, _ in template_entries(module)]
    if ref not in known:
        listing = ", ".join(known) if known else "none"
        raise CliError(f"{ref!r} is neither a blueprint file nor a known template (templates: {listing})")
    loaded: Any = module.load_template(ref)
    if isinstance(loaded, CompiledBlueprint):
        return loaded, None
    if isinstance(loaded, (str, Path)) and Path(loaded).is_file():
        return load_blueprint(Path(loaded)), None
    return compile_blueprint(as_blueprint_json(loaded), source_label=f"template {ref}"), None


def add_import_paths(*dirs: Path | None) -> None:
    """Let function workers (``module:callable``) be imported from these directories too."""
    for d in dirs:
        if d is None:
            continue
        text = str(d)
        if text not in sys.path:
            sys.path.append(text)


BLUEPRINT_DIR = "blueprint_dir"
"""The board meta key where the CLI records the directory of the blueprint file a board was made from."""


def load_for_new_board(ref: str) -> tuple[CompiledBlueprint, dict[str, Any] | None]:
    """``load_blueprint_or_template(ref)``, with function workers importable from the working
    directory and the blueprint file's directory from now on; and the board meta that records that
    directory (None for a template), so the commands that take the board up later (resume, mcp
    serve, worker) import them from there too."""
    compiled, path = load_blueprint_or_template(ref)
    add_import_paths(Path.cwd(), path.parent if path is not None else None)
    return compiled, ({BLUEPRINT_DIR: str(path.parent.resolve())} if path is not None else None)


def add_board_import_paths(meta: Mapping[str, Any]) -> None:
    """As when the board was created: function workers import from the working directory and the
    blueprint's directory recorded in the board's ``meta`` (used only if it still exists)."""
    where = meta.get(BLUEPRINT_DIR)
    add_import_paths(Path.cwd(), Path(where) if isinstance(where, str) and Path(where).is_dir() else None)


def cell(text: str | None, style: str = "") -> Text:
    """A table cell that never wraps: one line, cut with an ellipsis when the column is narrow."""
    return Text(" ".join(str(text or "").split()), style=style, no_wrap=True, overflow="ellipsis")


def short(text: str | None, limit: int = 80) -> str:
    """One line of at most ``limit`` characters (an ellipsis marks a cut)."""
    if not text:
        return ""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
