"""The web dashboard (``slateboard serve``): boards, time travel over states, the record
timeline, the views workers saw, tokens per worker and component, and live updates.

``create_app(store, token=...)`` builds the FastAPI app (needs the ``web`` extra: fastapi,
uvicorn, sse-starlette). The page is plain HTML/JS/CSS shipped in ``static/``: no build step and
nothing fetched from elsewhere. See ``_app`` for the API, ``slateboard.httpguard`` for the token rule, ``_data`` for how
states and views are rebuilt from the log.
"""

from ..httpguard import MIN_TOKEN_CHARS, is_loopback
from ._app import create_app, redact_url

__all__ = [
    "MIN_TOKEN_CHARS",
    "create_app",
    "is_loopback",
    "redact_url",
]
