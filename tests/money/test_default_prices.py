"""Prices by default (issue 42, issue 48's last point): with nothing configured, every common model
string form of the OpenAI, Anthropic, Gemini, Groq, Mistral and DeepSeek models their price lists
name has a dollar cost; a user table still wins; an unknown model stays unknown; a run on an
OpenAI-compatible server gives ``cost_usd`` in ``--json`` and ``--max-cost`` lets it run."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
from models_testkit import StubReply, StubServer, chat_completion

from _support.boards import NOTE_REPLY, note_loop
from slateboard.models.errors import ModelConfigError
from slateboard.models.pricing import PriceTable, price_lookups
from slateboard.models.registry import normalise_model_string

genai_data = pytest.importorskip("genai_prices.data", reason="genai-prices is a dependency: reinstall slateboard")

FORMS: dict[str, tuple[str, ...]] = {
    "openai": ("{}", "openai:{}", "openai/{}", "openai:{}@https://gateway.example/v1"),
    "anthropic": ("{}", "anthropic:{}", "anthropic/{}", "anthropic:{}@https://api.anthropic.com"),
    "google": ("{}", "gemini/{}", "google-gla:{}", "openai:{}@https://generativelanguage.googleapis.com/v1beta/openai"),
    "groq": ("groq:{}", "groq/{}", "openai:{}@https://api.groq.com/openai/v1"),
    "mistral": ("mistral:{}", "mistral/{}", "openai:{}@https://api.mistral.ai/v1"),
    "deepseek": ("deepseek:{}", "deepseek/{}", "openai:{}@https://api.deepseek.com/v1"),
}
"""How users spell a model of each provider (bare, pydantic-ai's ``provider:model``, litellm's
``provider/model``, and slateboard's ``openai:model@URL`` of the provider's endpoint)."""


def _names(clause: Any) -> Iterator[str]:
    """Model names a list entry's match clause accepts (equals, or a prefix completed)."""
    for attr in ("or_", "and_"):
        for inner in getattr(clause, attr, None) or ():
            yield from _names(inner)
    if isinstance(getattr(clause, "equals", None), str):
        yield clause.equals
    if isinstance(getattr(clause, "starts_with", None), str):
        yield clause.starts_with + ("" if clause.starts_with.endswith("-") else "-") + "2025-01-01"


def _listed() -> list[tuple[str, str]]:
    out = []
    for provider in genai_data.providers:
        if provider.id in FORMS:
            for model in provider.models:
                names = [n for n in [model.id, *_names(model.match)] if model.is_match(n.lower())]
                out.append((provider.id, names[0] if names else model.id))
    return out


LISTED = _listed()


def _a_model_string(text: str) -> bool:
    """True when slateboard takes ``text`` as a model string (bare names only for the known prefixes)."""
    try:
        normalise_model_string(text)
    except ModelConfigError:
        return False
    return True


def test_the_lists_name_models_of_each_provider() -> None:
    counts = {p: sum(1 for q, _ in LISTED if q == p) for p in FORMS}
    assert all(n >= 5 for n in counts.values()), counts


@pytest.mark.parametrize("provider", sorted(FORMS))
def test_every_listed_model_has_a_cost_in_every_form(provider: str) -> None:
    table = PriceTable()
    unpriced = [
        form.format(name)
        for p, name in LISTED
        if p == provider
        for form in FORMS[provider]
        if (form != "{}" or _a_model_string(name)) and table.cost(form.format(name), 1000, 100) is None
    ]
    assert unpriced == []


@pytest.mark.parametrize(
    "model",
    [
        "groq:llama-3.3-70b-versatile",  # issue 48: the provider part was dropped
        "groq/llama-3.3-70b-versatile",
        "openai/gpt-4o-mini",  # issue 48: litellm's openai/ prefix found no price
        "openai:gpt-4o-mini@http://127.0.0.1:9/v1",  # any OpenAI-compatible endpoint
        "gemini/gemini-2.0-flash",
        "gpt-4o-mini",
        "claude-3-5-haiku-latest",
    ],
)
def test_the_common_forms_that_found_no_price_have_one(model: str) -> None:
    cost = PriceTable().cost(model, 1_000_000, 0)
    assert cost is not None and cost > 0


def test_the_same_model_costs_the_same_in_every_form() -> None:
    table = PriceTable()
    forms = ["gpt-4o-mini", "openai:gpt-4o-mini", "openai/gpt-4o-mini", "openai:gpt-4o-mini@http://127.0.0.1:9/v1"]
    assert len({table.cost(m, 12_345, 678) for m in forms}) == 1


def test_a_user_table_wins_and_unknown_stays_unknown() -> None:
    mine = PriceTable.from_mapping({"openai:gpt-4o-mini": {"input": 100.0, "output": 100.0}})
    assert mine.cost("openai:gpt-4o-mini", 1_000_000, 0) == pytest.approx(100.0)
    assert mine.cost("openai/gpt-4o-mini", 1_000_000, 0) == pytest.approx(0.15)  # another string: the list
    table = PriceTable()
    unknown_models = (
        "openai:nobody-priced-this@http://127.0.0.1:9/v1",
        "ollama:llama3",
        "groq:no-such-model",
        "walkthrough",
    )
    for unknown in unknown_models:
        assert table.cost(unknown, 1000, 1000) is None


def test_a_key_in_the_url_still_prices_and_is_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    secret = "sk-in-the-url-4242"
    model = f"openai:gpt-4o-mini@https://user:{secret}@gateway.example/v1"
    assert PriceTable().cost(model, 1000, 10) == PriceTable().cost("gpt-4o-mini", 1000, 10)
    assert PriceTable().cost(model, 10, 10, cached_in=20) is None  # logged as unknown
    assert secret not in caplog.text and "unknown" in caplog.text


def test_lookups_keep_the_provider() -> None:
    assert price_lookups("groq:llama3-8b-8192") == (("llama3-8b-8192", {"provider_id": "groq"}),)
    assert price_lookups("openai/gpt-4o") == (("gpt-4o", {"provider_id": "openai"}),)
    assert price_lookups("gpt-4o")[0] == ("gpt-4o", {"provider_id": "openai"})
    assert price_lookups("ollama:llama3") == ()


USAGE = {"prompt_tokens": 100, "completion_tokens": 100, "total_tokens": 200}


@pytest.fixture
async def fake() -> AsyncIterator[StubServer]:
    server = await StubServer([StubReply(200, chat_completion(NOTE_REPLY, usage=USAGE))]).start()
    yield server
    await server.close()


@pytest.mark.parametrize("cap", [None, "1"])
async def test_a_run_on_the_default_install_has_a_cost_and_max_cost_runs(
    fake: StubServer, tmp_path: Path, cap: str | None
) -> None:
    import asyncio

    bp = tmp_path / "notes.yaml"
    bp.write_text(json.dumps(note_loop("notes", until=3)), encoding="utf-8")
    model = f"openai:gpt-4o-mini@{fake.url}/v1"
    args = ["run", str(bp), "--model", model, "--store", "memory://", "--parallel", "1", "--json"]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "from slateboard.cli import main; main()",
        *args,
        *(["--max-cost", cap] if cap else []),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    out, err = (b.decode() for b in await proc.communicate())
    assert proc.returncode == 0, err
    result = json.loads(out)
    call = PriceTable().cost("gpt-4o-mini", 100, 100)
    assert call is not None
    assert result["cost_usd"] == pytest.approx(3 * call)
    assert result["cost_by_component"] == {"worker": pytest.approx(3 * call)}
