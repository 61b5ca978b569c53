"""Per-tenant tokens on the dashboard (issue 44).

With ``create_app(..., tenant_tokens=True)`` every request must carry a token (as for
``TokenGuard``: ``Authorization: Bearer`` or ``?token=``). ``TenantTokenGuard`` maps it to a
tenant through the store's registry (``slateboard tenant add``/``token``; only digests are
stored); the operator's ``token``, when the app has one, sees every board. A token that maps to
nothing is a 401. The request then reads through its tenant's own ``Dashboard`` over a
``TenantStore``: another tenant's board is a 404 with the very body a missing board gets (not a
403, which would say that it exists), and the board list, its counts and costs, the event
streams and the caches are the tenant's alone.
"""

from __future__ import annotations

import hmac
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from ..httpguard import error_response, presented_token
from ..stores.tenancy import TenantStore, tenant_registry
from ._data import Dashboard

TENANT_SCOPE_KEY = "slateboard.tenant"
"""Where the guard leaves a request's tenant in its ASGI scope (None: the operator)."""


class TenantTokenGuard:
    """ASGI middleware: the request's token names its tenant (see the module docstring)."""

    def __init__(self, app: ASGIApp, *, operator_token: str | None, name: str = "this dashboard") -> None:
        self.app = app
        self.operator = operator_token.encode("utf-8") if operator_token else None
        self.name = name

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = presented_token(scope)
        if given is None:
            message = f"{self.name} needs a token: send 'Authorization: Bearer <token>' or add ?token=<token>"
            await error_response(401, message)(scope, receive, send)
            return
        tenant: str | None = None
        if self.operator is None or not hmac.compare_digest(given, self.operator):
            dashboard: Dashboard = scope["app"].state.dashboard
            try:
                text = given.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            tenant = await tenant_registry(dashboard.store).tenant_of(text) if text else None
            if tenant is None:
                await error_response(401, "wrong token")(scope, receive, send)
                return
        scope[TENANT_SCOPE_KEY] = tenant
        await self.app(scope, receive, send)


def dashboard_for(state: Any, scope: Scope) -> Dashboard:
    """The dashboard a request reads through: its tenant's (made once per tenant, over the
    app's store), or the app's own for the operator and for apps without tenant tokens."""
    base: Dashboard = state.dashboard
    tenant = scope.get(TENANT_SCOPE_KEY)
    if tenant is None:
        return base
    made: dict[str, Dashboard] | None = getattr(state, "tenant_dashboards", None)
    if made is None:
        made = state.tenant_dashboards = {}
    found = made.get(tenant)
    if found is None:
        scoped = TenantStore(base.store, tenant, owns=False)
        found = made[tenant] = Dashboard(scoped, poll_s=base.poll_s, anchor=base.anchor)
    return found
