"""The CLI acts within one tenant (``--tenant`` anywhere on the line, or $SLATEBOARD_TENANT):
another tenant's board cannot be listed, shown, logged, followed, forked, approved, refused,
resumed or cancelled, and every such attempt answers exactly what a missing board answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tenant_testkit import HELD, NOTES, OTHER_ID, Cli, same_as_missing, write_blueprint


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent))
    monkeypatch.chdir(tmp_path)
    run = Cli(f"sqlite:///{tmp_path / 'shared.db'}")
    for tenant in ("acme", "globex"):
        added = run("tenant", "add", tenant)
        assert added.exit_code == 0, added.output
    return run


@pytest.fixture
def boards(cli: Cli, tmp_path: Path) -> dict[str, str]:
    """acme's paused board (its answer held), globex's finished one, and one of no tenant."""
    held = write_blueprint(tmp_path / "held.json", HELD)
    notes = write_blueprint(tmp_path / "notes.json", NOTES)
    acme = cli.json("run", str(held), "--task", "acme secret", tenant="acme")
    assert acme["end_reason"].startswith("paused: awaiting approval")
    globex = cli.json("run", str(notes), "--task", "globex", tenant="globex")
    plain = cli.json("run", str(notes), "--task", "nobody's")
    return {"acme": acme["board_id"], "globex": globex["board_id"], "plain": plain["board_id"]}


def test_each_tenant_lists_only_its_boards_and_the_operator_all(cli: Cli, boards: dict[str, str]) -> None:
    assert [b["board_id"] for b in cli.json("boards", tenant="acme")] == [boards["acme"]]
    assert [b["board_id"] for b in cli.json("boards", tenant="globex")] == [boards["globex"]]
    assert {b["board_id"] for b in cli.json("boards")} == set(boards.values())
    # the board list of a tenant says nothing about the others, not even how many there are
    listing = cli("boards", tenant="globex").stdout
    assert boards["acme"] not in listing and boards["plain"] not in listing and "acme" not in listing


COMMANDS: list[tuple[str, ...]] = [
    ("show", "{id}"),
    ("log", "{id}"),
    ("watch", "{id}"),
    ("fork", "{id}", "--at", "1"),
    ("approve", "{id}"),
    ("refuse", "{id}"),
    ("resume", "{id}"),
    ("cancel", "{id}"),
    ("replay", "{id}", "--verify"),
    ("anchor", "{id}"),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_another_tenants_board_answers_as_a_missing_one(
    cli: Cli, boards: dict[str, str], command: tuple[str, ...]
) -> None:
    theirs = boards["acme"]
    for ref in (theirs, theirs[:8]):  # the full id and a unique prefix of it
        got = cli(*[a.replace("{id}", ref) for a in command], tenant="globex")
        missing = cli(
            *[a.replace("{id}", OTHER_ID if ref == theirs else OTHER_ID[:8]) for a in command], tenant="globex"
        )
        assert got.exit_code == missing.exit_code != 0, got.output
        assert got.stdout == missing.stdout
        want = missing.stderr.replace(OTHER_ID[:8], ref[:8]) if ref != theirs else missing.stderr
        assert same_as_missing(got.stderr, missing.stderr, theirs) or got.stderr == want, (got.stderr, missing.stderr)
        assert "acme secret" not in got.output
    # nothing changed on acme's board: still paused, its answer still held
    (acme,) = cli.json("boards", tenant="acme")
    assert acme["status"] == "paused" and acme["board_id"] == theirs, acme


def test_the_untenanted_board_is_no_tenants(cli: Cli, boards: dict[str, str]) -> None:
    got = cli("show", boards["plain"], tenant="acme")
    assert got.exit_code != 0 and "no board" in got.stderr
    assert cli.json("show", boards["plain"])["board_id"] == boards["plain"]


def test_the_owner_acts_on_its_board(cli: Cli, boards: dict[str, str]) -> None:
    board = boards["acme"]
    assert cli("approve", board, "--by", "carol", tenant="acme").exit_code == 0
    resumed = cli.json("resume", board, tenant="acme")
    assert resumed["end_reason"] == "done" and resumed["answer"] == "2 notes"
    child = cli.json("fork", board, "--at", "1", tenant="acme")
    # the fork is acme's too: globex cannot see it, acme lists it
    child_id = child["board_id"]
    assert child["parent"] == board
    assert child_id in {b["board_id"] for b in cli.json("boards", tenant="acme")}
    assert child_id not in {b["board_id"] for b in cli.json("boards", tenant="globex")}


def test_the_tenant_option_stands_anywhere_and_the_environment_gives_it(cli: Cli, boards: dict[str, str]) -> None:
    before = cli.runner.invoke(
        __import__("slateboard.cli", fromlist=["app"]).app,
        ["--tenant", "acme", "boards", "--json"],
        env={"SLATEBOARD_STORE": cli.store_url, "SLATEBOARD_TENANT": ""},
    )
    assert before.exit_code == 0 and boards["acme"] in before.stdout and boards["globex"] not in before.stdout
    by_env = cli.runner.invoke(
        __import__("slateboard.cli", fromlist=["app"]).app,
        ["boards", "--json"],
        env={"SLATEBOARD_STORE": cli.store_url, "SLATEBOARD_TENANT": "globex"},
    )
    assert by_env.exit_code == 0 and boards["globex"] in by_env.stdout and boards["acme"] not in by_env.stdout


@pytest.mark.parametrize(
    ("tenant", "needle"),
    [("nosuch", "no tenant 'nosuch' in this store"), ("Bad Id", "malformed"), ("../x", "malformed"), ("", "malformed")],
)
def test_an_unknown_or_malformed_tenant_is_a_usage_error(
    cli: Cli, boards: dict[str, str], tenant: str, needle: str
) -> None:
    got = cli("boards", tenant=tenant) if tenant else cli("boards", "--tenant=")
    if tenant == "":
        # an empty --tenant= is no tenant: the operator's view
        assert got.exit_code == 0
        return
    assert got.exit_code == 2, got.output
    assert needle in got.stderr and "--tenant" in got.stderr
    assert "acme" not in got.stderr and "globex" not in got.stderr  # no list of the others
    assert "Traceback" not in got.output


def test_the_registry_is_the_operators(cli: Cli) -> None:
    assert cli.json("tenant", "list") == ["acme", "globex"]
    refused = cli("tenant", "list", tenant="acme")
    assert refused.exit_code == 2 and "operator" in refused.stderr and "globex" not in refused.output
    again = cli("tenant", "add", "acme")
    assert again.exit_code == 2 and "already exists" in again.stderr
    bad = cli("tenant", "add", "No Way")
    assert bad.exit_code == 2 and "malformed" in bad.stderr
    unknown = cli("tenant", "token", "nosuch")
    assert unknown.exit_code == 2 and "no tenant 'nosuch'" in unknown.stderr


def test_ledgers_are_per_tenant(cli: Cli, boards: dict[str, str], tmp_path: Path) -> None:
    assert cli("ledger", "set", "team", "1", tenant="acme").exit_code == 0
    assert cli.json("ledger", "show", tenant="globex") == []
    shown = cli("ledger", "show", "team", tenant="globex")
    assert shown.exit_code == 2 and "unknown ledger 'team'" in shown.stderr and "known: none" in shown.stderr
    # globex cannot spend on acme's ledger: --ledger team is unknown to it
    notes = write_blueprint(tmp_path / "n.json", NOTES)
    spend = cli("run", str(notes), "--ledger", "team", tenant="globex")
    assert spend.exit_code == 2 and "unknown ledger 'team'" in spend.stderr
    # a ledger of the same name in globex is globex's own
    assert cli("ledger", "set", "team", "5", tenant="globex").exit_code == 0
    acme: Any = cli.json("ledger", "show", tenant="acme")
    globex: Any = cli.json("ledger", "show", tenant="globex")
    assert [(row["name"], row["cap_usd"]) for row in acme] == [("team", 1.0)]
    assert [(row["name"], row["cap_usd"]) for row in globex] == [("team", 5.0)]
    assert "acme/" not in cli("ledger", "show", tenant="acme").output
    # the operator sees both, each under its tenant
    every = cli("ledger", "show").output
    assert "acme/team" in every and "globex/team" in every
    for tenant in ("acme", "globex"):
        assert cli("ledger", "delete", "team", tenant=tenant).exit_code == 0
    assert cli("ledger", "reset", "team", tenant="acme").exit_code == 2


def test_memory_is_per_tenant_on_the_command_line(cli: Cli, boards: dict[str, str]) -> None:
    board = boards["acme"]
    got = cli("memory", "distill", board, "--path", "/notes/*", tenant="globex")
    missing = cli("memory", "distill", OTHER_ID, "--path", "/notes/*", tenant="globex")
    assert got.exit_code == missing.exit_code != 0
    assert same_as_missing(got.stderr, missing.stderr, board)
    assert cli("approve", board, tenant="acme").exit_code == 0
    assert cli.json("resume", board, tenant="acme")["end_reason"] == "done"
    distilled = cli.json("memory", "distill", board, "--path", "/notes/*", tenant="acme")
    assert len(distilled["facts"]) == 2
    assert [f["board"] for f in cli.json("memory", "search", "note", tenant="acme")] == [board, board]
    assert cli.json("memory", "search", "note", tenant="globex") == []
    assert "0 fact(s) pruned" in cli("memory", "prune", "--keep-last", "0", tenant="globex").stdout
    assert len(cli.json("memory", "search", "note", tenant="acme")) == 2
    unknown = cli("memory", "search", "note", tenant="nosuch")
    assert unknown.exit_code == 2 and "no tenant 'nosuch'" in unknown.stderr
