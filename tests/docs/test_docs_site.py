"""The checks the docs site's build hook makes (docs/_hooks/slateboard_docs.py): a public name
without a docstring, or missing from the API page, fails `mkdocs build`; the generated blueprint
reference has a row for every field; the generated CLI reference has every command."""

from __future__ import annotations

import importlib.util
import re
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOOKS = ROOT / "docs" / "_hooks" / "slateboard_docs.py"


def _hooks() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("slateboard_docs_hooks", HOOKS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


hooks = _hooks()


def _module(**members: object) -> types.ModuleType:
    module = types.ModuleType("fake")
    for name, value in members.items():
        setattr(module, name, value)
    module.__all__ = list(members)  # type: ignore[attr-defined]
    return module


def test_a_public_name_without_a_docstring_is_reported() -> None:
    def documented() -> None:
        """Does a thing."""

    def bare() -> None:
        pass

    class Documented:
        """A thing."""

    class InheritsOnly(Documented):
        pass

    class Blank:
        """ """

    fake = _module(
        documented=documented,
        bare=bare,
        Documented=Documented,
        InheritsOnly=InheritsOnly,
        Blank=Blank,
        __version__="1.0",
    )
    assert hooks.missing_docstrings(fake) == ["bare", "InheritsOnly", "Blank"]


def test_the_build_fails_on_a_missing_docstring(monkeypatch: pytest.MonkeyPatch) -> None:
    from mkdocs.exceptions import PluginError

    import slateboard

    assert hooks.missing_docstrings(slateboard) == []
    config = object()
    assert hooks.on_config(config) is config

    def undocumented() -> None:
        pass

    monkeypatch.setattr(slateboard, "undocumented", undocumented, raising=False)
    monkeypatch.setattr(slateboard, "__all__", [*slateboard.__all__, "undocumented"])
    with pytest.raises(PluginError, match="without a docstring: undocumented"):
        hooks.on_config(config)


def test_the_api_page_must_render_every_public_name() -> None:
    from mkdocs.exceptions import PluginError

    page = types.SimpleNamespace(file=types.SimpleNamespace(src_uri="api.md"))
    html = '<h2 id="slateboard.Kernel">Kernel</h2><h3 id="slateboard.kernel.replay.replay">replay</h3>'
    assert hooks.missing_from_reference(html, ["Kernel", "replay", "Team"]) == ["Team"]
    with pytest.raises(PluginError, match=r"missing from api\.md"):
        hooks.on_page_content(html, page)
    other = types.SimpleNamespace(file=types.SimpleNamespace(src_uri="install.md"))
    assert hooks.on_page_content("<p/>", other) == "<p/>"


def test_the_blueprint_reference_has_every_field() -> None:
    from slateboard.blueprint import models

    text = hooks.blueprint_fields()
    for name in (
        "Blueprint",
        "WorkerSpec",
        "RuleSpec",
        "Trigger",
        "InvariantSpec",
        "StageSpec",
        "RetentionSpec",
        "VisibilitySpec",
        "VisibleCollectionSpec",
        "Limits",
        "Price",
        "CircuitSpec",
    ):
        for field_name, field in getattr(models, name).model_fields.items():
            assert f"| `{field.alias or field_name}` |" in text, (name, field_name)
    assert "**required**" in text  # schema and workers


def test_an_undocumented_blueprint_field_fails_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(hooks.FIELD_NOTES, ("RuleSpec", "invoke"))
    with pytest.raises(RuntimeError, match=r"RuleSpec\.invoke has no description"):
        hooks.blueprint_fields()


def test_the_cli_reference_has_every_command() -> None:
    text = hooks.cli_reference()
    for command in ("slateboard run", "slateboard log", "slateboard replay", "slateboard mcp serve"):
        assert f"`{command}`" in text, command
    assert "Usage: slateboard run [OPTIONS]" in text
    assert "`slateboard eval" not in text  # slateboard-eval's commands have their own page


def test_the_evaluation_cli_reference_has_the_plugin_commands() -> None:
    pytest.importorskip("slateboard_eval", reason="needs slateboard-eval")
    text = hooks.cli_reference(plugins=True)
    for command in ("slateboard eval", "slateboard eval textworld", "slateboard eval report", "slateboard faults"):
        assert f"`{command}`" in text, command
    assert "`slateboard run`" not in text


def test_markers_are_expanded_and_other_pages_left_alone() -> None:
    out = hooks.on_page_markdown("intro\n<!-- blueprint-fields -->\n")
    assert "<!--" not in out and "| `invoke` |" in out
    assert hooks.on_page_markdown("plain page") == "plain page"


def test_a_subpackage_name_without_a_docstring_fails_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    from mkdocs.exceptions import PluginError

    import slateboard.workers

    def bare() -> None:
        pass

    monkeypatch.setattr(slateboard.workers, "bare", bare, raising=False)
    monkeypatch.setattr(slateboard.workers, "__all__", [*slateboard.workers.__all__, "bare"])
    with pytest.raises(PluginError, match=re.escape("slateboard.workers without a docstring: bare")):
        hooks.on_config(object())


def test_a_keyword_without_a_row_is_reported() -> None:
    def configure(self: object, known: int = 1, *args: object, new_one: str = "", **rest: object) -> None:
        """A callable with keywords."""

    table = "| keyword | default |\n| --- | --- |\n| `known` | 1 |\n"
    assert hooks.missing_keywords(table, configure, ("self",)) == ["new_one"]
    assert hooks.missing_keywords(table + "| `new_one` | '' |\n", configure, ("self",)) == []


@pytest.mark.parametrize("page", sorted(hooks.KEYWORD_TABLES))
def test_the_keyword_tables_list_every_keyword(page: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pages document every keyword of the signatures they cover, and the build fails as soon
    as a signature gains one the table does not list."""
    import importlib

    from mkdocs.exceptions import PluginError

    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    hooks._check_keyword_tables(text, page)  # complete today
    module_name, path, _exempt = hooks.KEYWORD_TABLES[page][0]
    owner_path, _, attr = path.rpartition(".")
    owner: object = importlib.import_module(module_name)
    for part in owner_path.split("."):
        owner = getattr(owner, part)
    real = getattr(owner, attr)

    def grown(*args: object, brand_new_keyword: int = 0, **kwargs: object) -> object:
        return real(*args, **kwargs)

    import inspect

    params = [*inspect.signature(real).parameters.values()]
    extra = inspect.Parameter("brand_new_keyword", inspect.Parameter.KEYWORD_ONLY, default=0)
    variadic = [p for p in params if p.kind == p.VAR_KEYWORD]
    grown.__signature__ = inspect.Signature([p for p in params if p.kind != p.VAR_KEYWORD] + [extra, *variadic])  # type: ignore[attr-defined]
    monkeypatch.setattr(owner, attr, grown)
    with pytest.raises(
        PluginError, match=re.escape(f"docs/{page}: the table of {path} has no row for: brand_new_keyword")
    ):
        hooks._check_keyword_tables(text, page)


def test_a_reference_block_that_renders_nothing_is_reported() -> None:
    html = '<h2 id="slateboard.models.Model">Model</h2>'
    assert hooks.unrendered(html, ["slateboard.models.Model", "slateboard.models.Gone"]) == ["slateboard.models.Gone"]
