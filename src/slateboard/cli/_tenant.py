"""``slateboard tenant add|list|token``: the store's registry of tenants (issue 44).

A tenant exists once ``tenant add NAME`` registered it; ``--tenant NAME`` (or
$SLATEBOARD_TENANT) then scopes every other command to its boards, ledgers and memory. ``add``
and ``token`` print the tenant's dashboard token once (the store keeps only its digest):
``slateboard serve --tenant-tokens`` maps each request's token to its tenant. These commands are
the operator's: within a tenant (``--tenant``) they are refused, since the registry names every
tenant.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import typer

from ._common import JsonOption, StoreOption, cli_tenant, console, print_json, run_async, store_label
from ._errors import EXIT_USAGE, CliError

tenant_app = typer.Typer(
    help="Tenants of the store: add one (and get its dashboard token), list them, issue a new token.",
    no_args_is_help=True,
)

T = TypeVar("T")
NameArgument = Annotated[str, typer.Argument(metavar="TENANT", help="The tenant id.", show_default=False)]


async def _with_registry(store: str | None, use: Callable[[Any], Awaitable[T]], *, create: bool) -> T:
    from ..errors import InvalidInput
    from ..redaction import register_url_secrets
    from ..stores import open_store
    from ..stores.tenancy import UnknownTenant, tenant_registry

    if cli_tenant() is not None:
        raise CliError(
            "the tenant registry is the operator's: run 'slateboard tenant ...' without --tenant"
            " (and without $SLATEBOARD_TENANT)",
            code=EXIT_USAGE,
        )
    register_url_secrets([store])
    opened = await open_store(store, create=create)
    try:
        return await use(tenant_registry(opened))
    except (InvalidInput, UnknownTenant) as exc:
        raise CliError(f"{exc.args[0] if exc.args else exc} ({store_label(store)})", code=EXIT_USAGE) from None
    finally:
        await opened.close()


def _print_token(tenant: str, token: str, as_json: bool, what: str) -> None:
    if as_json:
        print_json({"tenant": tenant, "token": token})
        return
    out = console()
    out.print(f"tenant {tenant} {what}; its dashboard token (shown once, the store keeps only its digest):")
    out.print(token, highlight=False)


@tenant_app.command("add")
def tenant_add_command(name: NameArgument, store: StoreOption = None, as_json: JsonOption = False) -> None:
    """Register TENANT in the store and print its first dashboard token."""
    token = run_async(lambda: _with_registry(store, lambda reg: reg.add(name), create=True))
    _print_token(name, token, as_json, "added")


@tenant_app.command("token")
def tenant_token_command(name: NameArgument, store: StoreOption = None, as_json: JsonOption = False) -> None:
    """Issue a new dashboard token for TENANT; its previous token stops working."""
    token = run_async(lambda: _with_registry(store, lambda reg: reg.issue_token(name), create=False))
    _print_token(name, token, as_json, "has a new token")


@tenant_app.command("list")
def tenant_list_command(store: StoreOption = None, as_json: JsonOption = False) -> None:
    """Every tenant of the store."""
    names: list[str] = run_async(lambda: _with_registry(store, lambda reg: reg.names(), create=False))
    if as_json:
        print_json(names)
        return
    out = console()
    for name in names:
        out.print(name, highlight=False)
    if not names:
        out.print("no tenants (add one with: slateboard tenant add NAME)")
