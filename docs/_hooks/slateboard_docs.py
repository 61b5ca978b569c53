"""MkDocs hooks of the reference site (``mkdocs.yml`` ``hooks:``).

* ``on_config`` fails the build when a public name (``__all__`` of ``slateboard`` and of the
  subpackages the reference pages render: ``DOCUMENTED_MODULES``) has no docstring of its own:
  the reference is rendered from docstrings, so a missing one is a hole in it.
* ``on_page_markdown`` fails it when a keyword table (``KEYWORD_TABLES``: the options of
  ``Team.blackboard``, ``Agent``, ``LLMWorker``) lacks a row for a parameter of the signature it
  documents, so a new keyword cannot ship undocumented; ``on_page_content`` when a ``::: name``
  block rendered no heading for ``name``.
* ``on_page_markdown`` expands two markers, so these pages are generated at build time, never
  hand-copied: ``<!-- cli-reference -->`` becomes the ``--help`` of every command of the Typer
  app, ``<!-- cli-reference-eval -->`` that of the commands slateboard-eval adds (``eval``,
  ``faults``; eval/), ``<!-- blueprint-fields -->`` a table of every field of the blueprint's models.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

SRC = Path(__file__).resolve().parents[2] / "src"
EVAL_SRC = Path(__file__).resolve().parents[2] / "eval" / "src"
for _path in (EVAL_SRC, SRC):  # build the docs of this tree, not of another installed copy
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


def missing_docstrings(module: ModuleType) -> list[str]:
    """The names of ``module.__all__`` whose object has no docstring of its own (a class that only
    inherits one counts as missing). Data attributes (``__version__``) are exempt: Python keeps
    no docstring on a string."""
    missing: list[str] = []
    for name in getattr(module, "__all__", []):
        obj = getattr(module, name)
        if not (inspect.isclass(obj) or inspect.isroutine(obj)):
            continue
        doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
        if not (isinstance(doc, str) and doc.strip()):
            missing.append(name)
    return missing


DOCUMENTED_MODULES = (
    "slateboard",
    "slateboard.models",
    "slateboard.workers",
    "slateboard.team",
    "slateboard.cli.plugin",
)
"""The modules whose ``__all__`` the reference pages render (api.md, models.md, workers.md,
team.md, plugins.md): each public name needs a docstring."""


def on_config(config: Any) -> Any:
    """Refuse to build an API reference with holes."""
    import importlib

    from mkdocs.exceptions import PluginError

    for name in DOCUMENTED_MODULES:
        missing = missing_docstrings(importlib.import_module(name))
        if missing:
            raise PluginError(f"public names of {name} without a docstring: {', '.join(missing)}")
    return config


# -- keyword tables ----------------------------------------------------------------------------
KEYWORD_TABLES: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {
    "team.md": [
        ("slateboard.team", "Team.blackboard", ()),
        ("slateboard.team", "Agent.__init__", ("self",)),
    ],
    "workers.md": [("slateboard.workers", "LLMWorker.__init__", ("self", "blueprint", "name", "model"))],
}
"""Per page: (module, callable, parameters it need not list) whose every named parameter must
have a row ``| `name` |`` in one of the page's tables (``**kwargs`` never needs one)."""


def missing_keywords(markdown: str, target: Any, exempt: tuple[str, ...] = ()) -> list[str]:
    """The parameters of ``target`` (a callable) with no table row ``| `name` |`` in
    ``markdown``, leaving out ``exempt`` ones and ``*args``/``**kwargs``."""
    rows = set(re.findall(r"^\|\s*`(\w+)`\s*\|", markdown, re.M))
    missing: list[str] = []
    for param in inspect.signature(target).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.name in exempt:
            continue
        if param.name not in rows:
            missing.append(param.name)
    return missing


def _check_keyword_tables(markdown: str, page: str) -> None:
    import importlib

    from mkdocs.exceptions import PluginError

    for module_name, path, exempt in KEYWORD_TABLES.get(page, []):
        target: Any = importlib.import_module(module_name)
        for part in path.split("."):
            target = getattr(target, part)
        missing = missing_keywords(markdown, target, exempt)
        if missing:
            raise PluginError(f"docs/{page}: the table of {path} has no row for: {', '.join(missing)}")


# -- the CLI reference -------------------------------------------------------------------------
def _commands(command: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    subcommands = getattr(command, "commands", None) or {}
    for name in sorted(subcommands):
        sub = subcommands[name]
        if not getattr(sub, "hidden", False):
            yield from _commands(sub, (*path, name))


def cli_reference(plugins: bool = False) -> str:
    """Markdown with the ``--help`` text of every (non-hidden) command of ``slateboard``: the core's,
    or with ``plugins`` those that plugin distributions add (slateboard-eval's ``eval`` and ``faults``)."""
    import typer
    from typer.testing import CliRunner

    from slateboard.cli import app
    from slateboard.cli._plugins import plugins as loaded_plugins

    runner = CliRunner()
    env = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
    if plugins:
        found = loaded_plugins()
        if not found.commands:
            raise RuntimeError(f"no plugin commands to document (is slateboard-eval importable?) {found.errors}")
        paths = [p for name in sorted(found.commands) for p, _ in _commands(found.commands[name], (name,))]
    else:
        paths = [p for p, _ in _commands(typer.main.get_command(app), ())]
    parts: list[str] = []
    for path in paths:
        result = runner.invoke(app, [*path, "--help"], env=env, prog_name="slateboard")
        if result.exit_code != 0:
            raise RuntimeError(f"`slateboard {' '.join(path)} --help` exited {result.exit_code}: {result.output}")
        title = " ".join(("slateboard", *path))
        level = "#" * min(2 + len(path), 4) if path else "##"
        text = "\n".join(line.rstrip() for line in result.output.strip("\n").splitlines())
        parts.append(f"{level} `{title}`\n\n```text\n{text}\n```\n")
    return "\n".join(parts)


# -- the blueprint's fields --------------------------------------------------------------------
def _type_name(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) if isinstance(annotation, type) else None
    text = text or str(annotation)
    return text.replace("typing.", "").replace("slateboard.blueprint.models.", "").replace("|", "\\|")


def _default(field: Any) -> str:
    from pydantic_core import PydanticUndefined

    if field.is_required():
        return "**required**"
    if field.default_factory is not None:
        value = field.default_factory()
        if hasattr(value, "model_dump"):
            return "(defaults)"
        return f"`{value!r}`"
    return "" if field.default is PydanticUndefined else f"`{field.default!r}`"


# Meanings of the fields that carry no ``description`` in slateboard/blueprint/models.py. A field
# with neither fails the build, so a new field cannot reach the reference undocumented.
FIELD_NOTES: dict[tuple[str, str], str] = {
    ("Blueprint", "name"): "The blueprint's name (shown by `boards` and in the log).",
    ("Blueprint", "description"): "Free text for people; never sent to a model.",
    ("Blueprint", "initial_state"): "The board's state at version 0; it must satisfy the schema and every invariant.",
    ("Blueprint", "workers"): "The workers by name (at least one); see `workers.<name>`.",
    ("Blueprint", "rules"): "What committed events invoke which worker; see `rules[]` and [rule semantics](cel.md).",
    ("Blueprint", "invariants"): "CEL conditions every committed state satisfies; see `invariants[]`.",
    ("Blueprint", "stages"): "Named phases that gate rules; see `stages[]`.",
    ("Blueprint", "limits"): "Hard bounds of a run; see `limits`.",
    ("Blueprint", "circuit"): "Thresholds of the circuit policy; see `circuit`.",
    ("RuleSpec", "name"): "The rule's name in logs and diagnostics (default: derived from its position).",
    ("RuleSpec", "on"): "The committed change that wakes the rule; see `rules[].on`.",
    ("RuleSpec", "invoke"): "The worker the rule puts on the agenda.",
    ("RuleSpec", "priority"): "Agenda priority: higher runs first; ties by age.",
    ("Trigger", "op"): "The RFC 6902 op that matches (`any` for every op; `start` fires once, when a run starts).",
    ("Trigger", "path"): "JSON Pointer pattern of the changed location (`*` = one segment, `-` = appended item).",
    ("InvariantSpec", "name"): "The invariant's name in rejection reasons.",
    ("InvariantSpec", "rule"): "CEL over `self`, `oldSelf`, `root`; true means the state is valid.",
    ("InvariantSpec", "message"): "The reason a rejection gives (default: the rule text).",
    ("StageSpec", "name"): "The stage's name, referred to by `rules[].stage`.",
    ("Limits", "max_steps"): "Most proposals (steps) in one run; then the run ends `exhausted`.",
    ("Limits", "max_tokens"): "Most model tokens in one run (all workers together); then the run ends.",
    ("Limits", "max_patch_bytes"): "Largest patch, in bytes, the kernel parses (larger: rejected at `parse`).",
    ("Limits", "max_ops"): "Most operations in one patch.",
    ("Limits", "max_depth"): "Deepest nesting of a JSON value in a patch.",
    ("Price", "input"): "Price per million input tokens.",
    ("Price", "output"): "Price per million output tokens.",
    ("CircuitSpec", "max_consecutive_invalid"): "Rejected proposals in a row of one worker before `on_invalid` acts "
    "(and of all workers at stage `model` before the run halts as 'model unavailable').",
    ("CircuitSpec", "max_noops"): "No-op proposals in a row of one worker before the policy switches away from it.",
    ("CircuitSpec", "cycle_window"): "Accepted records searched for a revisited state (A->B->A): a revisit halts.",
    ("CircuitSpec", "stuck_after"): "Proposals without an accepted one before the run halts as stuck.",
    ("CircuitSpec", "on_invalid"): "The reaction to `max_consecutive_invalid`: retry with feedback, switch worker, "
    "halve the view budget, or halt.",
    ("CircuitSpec", "retries"): "Times a reaction is taken for one streak before the run halts.",
}


def blueprint_fields() -> str:
    """Markdown tables of every field of the blueprint and the models it contains."""
    from slateboard.blueprint import models

    order = [
        ("Blueprint", "top level"),
        ("WorkerSpec", "`workers.<name>`"),
        ("RuleSpec", "`rules[]`"),
        ("Trigger", "`rules[].on`"),
        ("InvariantSpec", "`invariants[]`"),
        ("StageSpec", "`stages[]`"),
        ("RetentionSpec", "`retention[]`"),
        ("VisibilitySpec", "`visibility`"),
        ("VisibleCollectionSpec", "`visibility.collections[]`"),
        ("GuardSpec", "`guards[]`"),
        ("Limits", "`limits`"),
        ("Price", "`limits.prices.<model>`"),
        ("CircuitSpec", "`circuit`"),
    ]
    parts: list[str] = []
    for name, where in order:
        model = getattr(models, name)
        doc = inspect.cleandoc(model.__doc__ or "").split("\n\n")[0].replace("\n", " ")
        parts.append(f"### {where}\n\n{doc}\n\n| field | type | default | meaning |\n| --- | --- | --- | --- |")
        for field_name, field in model.model_fields.items():
            key = field.alias or field_name
            description = field.description or FIELD_NOTES.get((name, field_name))
            if not description:
                raise RuntimeError(f"blueprint field {name}.{field_name} has no description: add one")
            description = description.replace("|", "\\|").replace("\n", " ")
            parts.append(f"| `{key}` | `{_type_name(field.annotation)}` | {_default(field)} | {description} |")
        parts.append("")
    return "\n".join(parts)


def missing_from_reference(html: str, names: list[str]) -> list[str]:
    """The ``names`` that have no heading in the rendered API page: an ``id`` that is
    ``slateboard.NAME`` or a path inside the package ending in ``.NAME``."""
    ids = set(re.findall(r'id="(slateboard(?:\.[\w]+)*)"', html))
    tails = {i.rsplit(".", 1)[-1] for i in ids}
    return [name for name in names if f"slateboard.{name}" not in ids and name not in tails]


_AUTODOC = re.compile(r"^:::\s+([\w.]+)\s*$", re.M)


def unrendered(html: str, identifiers: list[str]) -> list[str]:
    """The ``::: identifier`` blocks of a page that rendered no heading with that id."""
    ids = set(re.findall(r'id="([\w.]+)"', html))
    return [i for i in identifiers if i not in ids and i != "slateboard"]


def on_page_content(html: str, page: Any, **_: Any) -> str:
    """The API page must render every public name (a name griffe resolves to something else,
    e.g. a function shadowed by its module, would otherwise vanish without a warning); every
    ``::: name`` block of any page must render a heading for ``name``."""
    from mkdocs.exceptions import PluginError

    if page.file.src_uri == "api.md":
        import slateboard

        missing = missing_from_reference(html, [n for n in slateboard.__all__ if not n.startswith("_")])
        if missing:
            raise PluginError(f"public names of slateboard missing from api.md: {', '.join(missing)}")
    lost = unrendered(html, _AUTODOC.findall(getattr(page, "markdown", None) or ""))
    if lost:
        raise PluginError(f"docs/{page.file.src_uri}: these reference blocks rendered nothing: {', '.join(lost)}")
    return html


_MARKERS = {
    "<!-- cli-reference -->": cli_reference,
    "<!-- cli-reference-eval -->": lambda: cli_reference(plugins=True),
    "<!-- blueprint-fields -->": blueprint_fields,
}


def on_page_markdown(markdown: str, page: Any = None, **_: Any) -> str:
    """Expand the generated sections of a page; check its keyword tables."""
    if page is not None:
        _check_keyword_tables(markdown, page.file.src_uri)
    for marker, render in _MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, render())
    return markdown
