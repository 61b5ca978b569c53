"""Function workers referred to by "module:callable" strings in the worker tests."""

from __future__ import annotations

from typing import Any

from slateboard.views import View
from slateboard.workers import function_worker


def append_note(view: View) -> list[dict[str, Any]]:
    """Append a note naming the topic it saw."""
    topic = view.data.get("/topic", "?")
    return [{"op": "add", "path": "/notes/-", "value": {"text": f"about {topic}", "author": "scribe"}}]


class Scribes:
    """A namespace, for dotted references like 'workers_functions:Scribes.loud'."""

    @staticmethod
    def loud(view: View, event: Any) -> str:
        return '[{"op":"add","path":"/notes/-","value":{"text":"LOUD","author":"scribe"}}]'


@function_worker(reads=["/topic", "/notes"], writes=["/notes/-"], ops=["add"])
def declared(view: View) -> dict[str, Any]:
    return {"op": "add", "path": "/notes/-", "value": {"text": "declared", "author": "scribe"}}


NOT_CALLABLE = 42
