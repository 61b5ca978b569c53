"""PNG figures of a report (``slateboard_eval.statistics.summarise``) with matplotlib (Agg):

* ``success.png``: success per (system, setting) of each suite, with Wilson intervals;
* ``tokens_per_success.png``: tokens per success on a log scale, with bootstrap intervals;
* ``ablations.png``: each slateboard setting against ``full`` (paired success delta and tokens
  per success ratio, with paired bootstrap intervals);
* ``budget.png``: the context-budget sweep (success and tokens per success by view budget), one
  curve per suite and swept setting (``budget=N`` sweeps ``full``, ``no-slicing+budget=N`` the
  unsliced board);
* ``blueprint_source.png``: the schema-source comparison: slateboard on the fixed blueprint
  (``full``) and on the generated one (``generated``), success and tokens per success per suite;
* ``errors_SUITE.png``: the erring-model sweep of a suite played at several error rates
  (``write_error_sweep_plot``: success and tokens per success against the rate, per system).

A figure with nothing to show (no ablation, no sweep) is not written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["write_error_sweep_plot", "write_plots"]


def _label(entry: dict[str, Any]) -> str:
    setting = str(entry["setting"])
    label = str(entry["system"]) if setting == "full" else f"{entry['system']}\n{setting}"
    rate = float(entry.get("error_rate") or 0.0)
    return f"{label}\np={rate:g}" if rate else label


def _err(iv: dict[str, Any]) -> tuple[float, float, float]:
    v = iv.get("value")
    lo = iv.get("low")
    hi = iv.get("high")
    if v is None:
        return 0.0, 0.0, 0.0
    return float(v), float(v) - float(lo if lo is not None else v), float(hi if hi is not None else v) - float(v)


def write_plots(report: dict[str, Any], out: Path | str) -> list[Path]:
    """Write the figures of ``report`` into directory ``out`` and return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    systems: list[dict[str, Any]] = [s for s in report.get("systems", []) if s.get("budget") is None]
    suites = sorted({str(s["suite"]) for s in systems})

    def save(fig: Any, name: str) -> None:
        path = root / name
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    if suites:
        for metric, name, title, log in (
            ("success", "success.png", "success (Wilson 95% interval)", False),
            ("tokens_per_success", "tokens_per_success.png", "tokens per success (bootstrap 95%, log scale)", True),
        ):
            fig, axes = plt.subplots(1, len(suites), figsize=(max(4.0, 2.2 + 1.1 * len(systems)), 3.8), squeeze=False)
            for ax, suite in zip(axes[0], suites, strict=True):
                entries = [s for s in systems if s["suite"] == suite]
                vals = [_err(e[metric]) for e in entries]
                xs = range(len(entries))
                ax.bar(
                    xs,
                    [v[0] for v in vals],
                    yerr=[[v[1] for v in vals], [v[2] for v in vals]],
                    capsize=3,
                    color="#4c72b0",
                )
                ax.set_xticks(list(xs), [_label(e) for e in entries], rotation=45, ha="right", fontsize=7)
                ax.set_title(suite, fontsize=9)
                if log and any(v[0] > 0 for v in vals):
                    ax.set_yscale("log")
                if not log:
                    ax.set_ylim(0, 1.05)
            fig.suptitle(title, fontsize=10)
            save(fig, name)

    ablations = [
        c for c in report.get("comparisons", []) if c["system"] == "slateboard" and "budget=" not in str(c["setting"])
    ]
    if ablations:
        fig, (left, right) = plt.subplots(1, 2, figsize=(9.0, 0.5 * len(ablations) + 2.0))
        labels = [f"{c['suite']}: {c['setting']}" for c in ablations]
        ys = range(len(ablations))
        d = [_err(c["success_delta"]) for c in ablations]
        left.barh(ys, [v[0] for v in d], xerr=[[v[1] for v in d], [v[2] for v in d]], capsize=3, color="#dd8452")
        left.set_yticks(list(ys), labels, fontsize=7)
        left.axvline(0, color="black", linewidth=0.8)
        left.set_title("success delta vs full (paired bootstrap)", fontsize=9)
        r = [_err(c["tokens_per_success_ratio"]) for c in ablations]
        right.barh(ys, [v[0] for v in r], xerr=[[v[1] for v in r], [v[2] for v in r]], capsize=3, color="#55a868")
        right.set_yticks(list(ys), [""] * len(ablations))
        right.axvline(1, color="black", linewidth=0.8)
        right.set_title("tokens per success / full", fontsize=9)
        save(fig, "ablations.png")

    sweep = [s for s in report.get("systems", []) if s.get("budget") is not None]
    if sweep:
        fig, ax = plt.subplots(figsize=(6.0, 3.8))
        twin = ax.twinx()
        curves = sorted({(str(s["suite"]), str(s.get("budget_base") or "full")) for s in sweep})
        for suite, base in curves:
            name = suite if base == "full" else f"{suite} {base}"
            pts = sorted(
                (s for s in sweep if s["suite"] == suite and str(s.get("budget_base") or "full") == base),
                key=lambda s: int(s["budget"]),
            )
            budgets = [int(s["budget"]) for s in pts]
            succ = [_err(s["success"]) for s in pts]
            ax.errorbar(
                budgets,
                [v[0] for v in succ],
                yerr=[[v[1] for v in succ], [v[2] for v in succ]],
                marker="o",
                capsize=3,
                label=f"{name} success",
            )
            tps = [s["tokens_per_success"]["value"] for s in pts]
            twin.plot(
                budgets,
                [t if t is not None else float("nan") for t in tps],
                marker="s",
                linestyle="--",
                label=f"{name} tokens/success",
            )
        ax.set_xscale("log")
        ax.set_xlabel("view budget (characters)")
        ax.set_ylabel("success")
        ax.set_ylim(0, 1.05)
        twin.set_ylabel("tokens per success")
        handles = ax.get_legend_handles_labels()
        more = twin.get_legend_handles_labels()
        ax.legend(handles[0] + more[0], handles[1] + more[1], fontsize=7, loc="lower right")
        ax.set_title("context-budget sweep", fontsize=10)
        save(fig, "budget.png")
    sources = [
        s for s in report.get("systems", []) if s["system"] == "slateboard" and s["setting"] in ("full", "generated")
    ]
    if any(s["setting"] == "generated" for s in sources):
        names = sorted({str(s["suite"]) for s in sources})
        fig, (left, right) = plt.subplots(1, 2, figsize=(max(6.0, 2.0 + 1.6 * len(names)), 3.8))
        width = 0.38
        for i, setting in enumerate(("full", "generated")):
            by_suite = {str(s["suite"]): s for s in sources if s["setting"] == setting}
            offsets = [n + (i - 0.5) * width for n in range(len(names))]
            label = "fixed" if setting == "full" else "generated"
            for ax, metric in ((left, "success"), (right, "tokens_per_success")):
                vals = [_err(by_suite[n][metric]) if n in by_suite else (0.0, 0.0, 0.0) for n in names]
                ax.bar(
                    offsets,
                    [v[0] for v in vals],
                    width,
                    yerr=[[v[1] for v in vals], [v[2] for v in vals]],
                    capsize=3,
                    label=label,
                    color="#4c72b0" if i == 0 else "#dd8452",
                )
        for ax, title in ((left, "success (Wilson 95%)"), (right, "tokens per success (bootstrap 95%)")):
            ax.set_xticks(list(range(len(names))), names, fontsize=8)
            ax.set_title(title, fontsize=9)
        left.set_ylim(0, 1.05)
        right.legend(fontsize=7)
        fig.suptitle("blueprint source: fixed vs generated (slateboard)", fontsize=10)
        save(fig, "blueprint_source.png")
    for suite in suites:
        played = [s for s in systems if s["suite"] == suite and s["setting"] == "full"]
        if len({float(s.get("error_rate") or 0.0) for s in played}) > 1:
            rated = {"systems": [{**s, "error_rate": float(s.get("error_rate") or 0.0)} for s in played]}
            written.append(write_error_sweep_plot(rated, root, name=f"errors_{suite}.png"))
    return written


def write_error_sweep_plot(sweep: dict[str, Any], out: Path | str, name: str = "errors.png") -> Path:
    """The error-rate sweep (``slateboard_eval.erring.error_sweep``) as one figure: success
    (Wilson 95%) and tokens per success (bootstrap 95%, log scale) against the error rate, one
    line per system. Returns the path written (``out/name``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    entries: list[dict[str, Any]] = list(sweep.get("systems", []))
    systems = list(dict.fromkeys(str(e["system"]) for e in entries))
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.0, 3.8))
    for k, system in enumerate(systems):
        pts = sorted((e for e in entries if e["system"] == system), key=lambda e: float(e["error_rate"]))
        rates = [float(e["error_rate"]) + (k - (len(systems) - 1) / 2) * 0.004 for e in pts]  # dodge the bars
        succ = [_err(e["success"]) for e in pts]
        left.errorbar(
            rates, [v[0] for v in succ], yerr=[[v[1] for v in succ], [v[2] for v in succ]], marker="o", capsize=3,
            label=system,
        )  # fmt: skip
        tps = [_err(e["tokens_per_success"]) for e in pts]
        shown = [
            (r, v) for r, v, e in zip(rates, tps, pts, strict=True) if e["tokens_per_success"]["value"] is not None
        ]
        if shown:
            right.errorbar(
                [r for r, _ in shown],
                [v[0] for _, v in shown],
                yerr=[[v[1] for _, v in shown], [v[2] for _, v in shown]],
                marker="s",
                capsize=3,
                label=system,
            )
    left.set_ylim(0, 1.05)
    left.set_xlabel("model error rate p")
    left.set_title("success (Wilson 95%)", fontsize=9)
    right.set_yscale("log")
    right.set_xlabel("model error rate p")
    right.set_title("tokens per success (bootstrap 95%)", fontsize=9)
    left.legend(fontsize=7, loc="lower left")
    fig.suptitle("when the model errs", fontsize=10)
    fig.tight_layout()
    path = root / name
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
