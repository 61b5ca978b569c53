"""The web dashboard (``slateboard serve``): boards, time travel over states, the record
timeline, the views workers saw, tokens per worker and component, and live updates.

``create_app(store, token=...)`` builds the FastAPI app (needs the ``web`` extra: fastapi,
uvicorn, sse-starlette). The page is plain HTML/JS/CSS shipped in ``static/``: no build step and
nothing fetched from elsewhere. See ``_app`` for the API, ``slateboard.httpguard`` for the token rule, ``_data`` for how
states and views are rebuilt from the log.
"""

from ..httpguard import MIN_TOKEN_CHARS, is_loopback
from ._app import STATIC, TOKEN_ENV, create_app, redact_url
from ._data import MAX_PAGE, ApiError, Dashboard

__all__ = [
    "MAX_PAGE",
    "MIN_TOKEN_CHARS",
    "STATIC",
    "TOKEN_ENV",
    "ApiError",
    "Dashboard",
    "create_app",
    "is_loopback",
    "redact_url",
]
