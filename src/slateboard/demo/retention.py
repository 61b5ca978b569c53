"""Function workers of the ``retention`` template: facts computed from the shipped
``metrics.csv``, a deterministic check of each hypothesis against the data, and the answer.

The model's only choice on this board is which fact to hypothesise as the cause; everything it
can be judged on is computed here from the data, so the answer states facts from the data with
their evidence, whatever the model.
"""

from __future__ import annotations

import csv
import re
from functools import cache
from importlib import resources
from typing import Any

from ..views import View

__all__ = ["CAUSES", "SYMPTOMS", "analyse", "answer", "check", "load_metrics", "screen"]

CAUSES = ("basic_price", "pro_price", "app_release")
"""Columns that can cause churn (things the company changed)."""
SYMPTOMS = ("cancellations", "support_tickets")
"""Columns that move with churn: large changes, but effects, not causes."""
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")  # fmt: skip


@cache
def load_metrics() -> tuple[dict[str, str], ...]:
    """The rows of the shipped ``metrics.csv`` (one per month, oldest first)."""
    text = resources.files("slateboard.demo").joinpath("metrics.csv").read_text(encoding="utf-8")
    return tuple(csv.DictReader(text.splitlines()))


def _month_of(question: str, rows: tuple[dict[str, str], ...]) -> int:
    """Index of the month the question names, else of the largest retention drop."""
    words = re.findall(r"[a-z]+", question.lower())
    for i, row in enumerate(rows):
        number = int(row["month"].split("-")[1])
        if _MONTHS[number - 1] in words and i > 0:
            return i
    drops = [float(rows[i - 1]["retention_rate"]) - float(rows[i]["retention_rate"]) for i in range(1, len(rows))]
    return 1 + drops.index(max(drops))


def _changed(rows: tuple[dict[str, str], ...], i: int, column: str) -> bool:
    if column == "app_release":
        return bool(rows[i][column])
    return rows[i][column] != rows[i - 1][column]


def _describe(rows: tuple[dict[str, str], ...], i: int, column: str) -> str:
    month = rows[i]["month"]
    if column == "app_release":
        return f"app release {rows[i][column]} shipped in {month}"
    before, after = float(rows[i - 1][column]), float(rows[i][column])
    pct = (after - before) / before * 100 if before else 0.0
    return f"{column} went from {rows[i - 1][column]} to {rows[i][column]} in {month} ({pct:+.0f}%)"


def analyse(view: View) -> list[dict[str, Any]]:
    """Add one fact per column that changed in the month the question is about, each marked
    ``cause`` (something the company changed) or ``symptom`` (moves with churn): causes first,
    then symptoms, in the data's column order."""
    rows = load_metrics()
    i = _month_of(str(view.data.get("/question") or ""), rows)
    ops: list[dict[str, Any]] = []
    retention = (
        f"retention_rate went from {rows[i - 1]['retention_rate']} to {rows[i]['retention_rate']} in {rows[i]['month']}"
    )
    ops.append({"op": "add", "path": "/observed", "value": retention})
    n = 0
    for column in (*CAUSES, *SYMPTOMS):
        if _changed(rows, i, column):
            n += 1
            kind = "symptom" if column in SYMPTOMS else "cause"
            fact = {"id": f"f{n}", "metric": column, "kind": kind, "text": _describe(rows, i, column)}
            ops.append({"op": "add", "path": "/facts/-", "value": fact})
    return ops


def screen(view: View, *, feedback: object = None) -> list[dict[str, Any]]:
    """A quick screen that hypothesises the fact whose metric moved most (largest relative
    change; a release counts as no change). The heuristic is well meant and deterministic, and
    on the shipped data it names ``cancellations`` (+200%), a symptom of churn: the kernel
    refuses it at the ``invariants`` stage, on any model, so every run shows a rejection with its
    reason. Told why (``feedback`` on the retry), the screen withdraws: it proposes only a
    ``test`` that the hypotheses are as it saw them (a no-op), leaving the choice to the
    ``hypothesis`` worker."""
    facts = view.data.get("/facts") or []
    hypotheses = view.data.get("/hypotheses") or []
    if feedback or not facts:
        return [{"op": "test", "path": "/hypotheses", "value": hypotheses}]
    rows = load_metrics()
    i = next((k for k, r in enumerate(rows) if r["month"] in str(facts[0]["text"])), 0)

    def moved(fact: dict[str, Any]) -> float:
        column = str(fact["metric"])
        if i == 0 or column == "app_release":
            return 0.0
        before = float(rows[i - 1][column])
        return abs(float(rows[i][column]) - before) / before if before else 0.0

    biggest = max(facts, key=moved)
    value = {"id": f"h{len(hypotheses) + 1}", "fact": biggest["id"]}
    return [{"op": "add", "path": "/hypotheses/-", "value": value}]


def check(view: View) -> list[dict[str, Any]]:
    """Judge the newest hypothesis against the data: its fact's column must not have changed in
    an earlier month in which retention held (a change that left retention alone is no cause)."""
    rows = load_metrics()
    hypotheses = view.data.get("/hypotheses") or []
    facts = {f["id"]: f for f in view.data.get("/facts") or []}
    newest = hypotheses[-1]
    fact = facts[newest["fact"]]
    column = fact["metric"]
    i = next(k for k, r in enumerate(rows) if r["month"] in fact["text"])
    earlier = [k for k in range(1, i) if _changed(rows, k, column)]
    if earlier:
        k = earlier[-1]
        verdict = "refuted"
        evidence = (
            f"{_describe(rows, k, column)} too, and retention_rate held "
            f"({rows[k - 1]['retention_rate']} -> {rows[k]['retention_rate']})"
        )
    else:
        verdict = "supported"
        if column == "app_release":
            before = "no app release shipped in any earlier month"
        else:
            before = f"{column} was {rows[i - 1][column]} in every earlier month"
        low = min(float(r["retention_rate"]) for r in rows[:i])
        high = max(float(r["retention_rate"]) for r in rows[:i])
        evidence = f"{before} ({rows[0]['month']} to {rows[i - 1]['month']}), while retention_rate stayed between {low} and {high}"
    value = {"hypothesis": newest["id"], "verdict": verdict, "evidence": evidence}
    return [{"op": "add", "path": "/checks/-", "value": value}]


def answer(view: View) -> list[dict[str, Any]]:
    """The answer from the checks: the supported cause with its evidence, and what was refuted."""
    facts = {f["id"]: f for f in view.data.get("/facts") or []}
    hypotheses = {h["id"]: h for h in view.data.get("/hypotheses") or []}
    checks = view.data.get("/checks") or []
    observed = str(view.data.get("/observed") or "")
    supported = [c for c in checks if c["verdict"] == "supported"]
    refuted = [facts[hypotheses[c["hypothesis"]]["fact"]]["text"] for c in checks if c["verdict"] == "refuted"]
    if supported:
        best = supported[0]
        fact = facts[hypotheses[best["hypothesis"]]["fact"]]
        text = f"{observed}. Likely cause: {fact['text']}. Evidence: {best['evidence']}."
    else:
        text = f"{observed}. No hypothesised cause was supported by the data."
    if refuted:
        text += " Ruled out: " + "; ".join(refuted) + "."
    return [{"op": "add", "path": "/answer", "value": text}]
