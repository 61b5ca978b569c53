"""Constrained-decoding benchmark: how often the local model's proposals are accepted by the kernel.

A small board with two LLM workers (a scribe appending notes ``{"text", "author": "scribe"}``, and
a judge setting ``/claims/*/status``) is run for N invocations per decoding mode, alternating the
workers, each on the committed state with its recent rejections in its view:

  contract  the reply is constrained by the schema of the proposals the worker may make now
            (slateboard.workers.constrain): authorised paths and ops, values typed by the schema
  json      the reply is constrained to the generic {"patch": [RFC 6902 ops]} shape only
  none      free text

It prints the acceptance rate per mode, the rejection stages, tokens and latency (a table, or JSON
with --json). Defaults: the in-process ``local`` model (SmolLM2-135M-Instruct), temperature 0.

    python benchmarks/constrained.py [--invocations 20] [--modes contract,json,none] [--json] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import Counter
from typing import Any

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import Kernel, Record
from slateboard.models import Model, resolve_model
from slateboard.views import kernel_view
from slateboard.workers import LLMWorker

BLUEPRINT: dict[str, Any] = {
    "name": "constrained-bench",
    "schema": {
        "type": "object",
        "required": ["topic", "notes", "claims"],
        "additionalProperties": False,
        "properties": {
            "topic": {"type": "string"},
            "notes": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["text", "author"],
                    "additionalProperties": False,
                    "properties": {
                        "text": {"type": "string", "minLength": 3, "maxLength": 120},
                        "author": {"const": "scribe"},
                    },
                },
            },
            "claims": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["text", "status"],
                    "additionalProperties": False,
                    "properties": {
                        "text": {"type": "string"},
                        "status": {"enum": ["open", "supported", "refuted"]},
                    },
                },
            },
        },
    },
    "initial_state": {
        "topic": "Why is the sky blue?",
        "notes": [],
        "claims": [
            {"text": "Sunlight is scattered by air molecules.", "status": "open"},
            {"text": "The sky is blue because it reflects the ocean.", "status": "open"},
            {"text": "Blue light has a shorter wavelength than red light.", "status": "open"},
        ],
    },
    "workers": {
        "scribe": {
            "instruction": "You take notes. Add one short note (one sentence) about the topic.",
            "reads": ["/topic", "/notes"],
            "writes": ["/notes/-"],
            "ops": ["add"],
            "view_budget": 1500,
        },
        "judge": {
            "instruction": "You judge claims. Set the status of one open claim to supported or refuted.",
            "reads": ["/topic", "/claims"],
            "writes": ["/claims/*/status"],
            "ops": ["replace"],
            "view_budget": 1500,
        },
    },
}

MODES = ("contract", "json", "none")


async def run_mode(model: Model, mode: str, invocations: int, max_tokens: int, temperature: float) -> dict[str, Any]:
    """Run ``invocations`` proposals (alternating workers) in one decoding mode; tally outcomes."""
    bp = compile_blueprint(BLUEPRINT)
    kernel = Kernel(bp)
    workers = {
        name: LLMWorker(
            bp,
            name,
            model,
            decoding=mode,  # type: ignore[arg-type]
            state=lambda: kernel.state,
            max_tokens=max_tokens,
            temperature=temperature,
            timeout=300,
        )
        for name in bp.workers
    }
    rejections: list[Record] = []
    outcomes: Counter[str] = Counter()
    per_worker: dict[str, Counter[str]] = {name: Counter() for name in workers}
    latencies: list[float] = []
    tokens_in = tokens_out = 0
    samples: list[dict[str, Any]] = []
    accepted_samples: list[dict[str, Any]] = []
    order = sorted(workers, reverse=True)  # scribe, judge, scribe, ...
    for i in range(invocations):
        name = order[i % len(order)]
        view = kernel_view(kernel, name, rejections=rejections[-6:])
        started = time.perf_counter()
        reply = await workers[name].propose(view)
        latencies.append(time.perf_counter() - started)
        decision = kernel.submit(reply.to_proposal(view, invocation=f"{mode}:{i}"))
        rec = decision.record
        key = "accepted" if decision.accepted else (rec.stage or rec.outcome)
        outcomes[key] += 1
        per_worker[name][key] += 1
        tokens_in += reply.usage.tokens_in
        tokens_out += reply.usage.tokens_out
        if rec.outcome == "rejected":
            rejections.append(rec)
        if decision.accepted and len(accepted_samples) < 6:
            accepted_samples.append({"worker": name, "patch": rec.patch})
        if len(samples) < 4 and not decision.accepted:
            samples.append(
                {"worker": name, "stage": key, "reason": (rec.reason or "")[:160], "reply": (reply.raw or "")[:160]}
            )
    accepted = outcomes.get("accepted", 0)
    return {
        "mode": mode,
        "invocations": invocations,
        "accepted": accepted,
        "acceptance": accepted / invocations if invocations else 0.0,
        "outcomes": dict(sorted(outcomes.items())),
        "per_worker": {w: dict(sorted(c.items())) for w, c in per_worker.items()},
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "latency_p50_s": round(statistics.median(latencies), 3) if latencies else 0.0,
        "latency_total_s": round(sum(latencies), 2),
        "final_notes": len(kernel.state["notes"]),
        "rejection_samples": samples,
        "accepted_samples": accepted_samples,
    }


def table(results: list[dict[str, Any]], model: str) -> str:
    """The results as a fixed-width text table."""
    lines = [
        f"model {model}; {results[0]['invocations'] if results else 0} invocations per mode, workers alternating",
        f"{'mode':<10} {'accepted':>9} {'rate':>6}  {'tokens in/out':>14} {'p50 s':>6}  outcomes (stage: count)",
    ]
    for r in results:
        stages = ", ".join(f"{k}: {v}" for k, v in r["outcomes"].items())
        lines.append(
            f"{r['mode']:<10} {r['accepted']:>4}/{r['invocations']:<4} {r['acceptance']:>6.0%}  "
            f"{r['tokens_in']:>7}/{r['tokens_out']:<6} {r['latency_p50_s']:>6.2f}  {stages}"
        )
    for r in results:
        for w, c in r["per_worker"].items():
            lines.append(f"  {r['mode']:<8} {w:<8} " + ", ".join(f"{k}: {v}" for k, v in c.items()))
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Run every requested mode on one shared model."""
    model = resolve_model(args.model)
    out = []
    for mode in args.modes:
        out.append(await run_mode(model, mode, args.invocations, args.max_tokens, args.temperature))
        if not args.json:
            print(f"... {mode}: {out[-1]['accepted']}/{args.invocations} accepted", file=sys.stderr)
    return out


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--invocations", type=int, default=20)
    parser.add_argument("--modes", type=lambda s: [m.strip() for m in s.split(",") if m.strip()], default=list(MODES))
    parser.add_argument("--model", default="local")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--out", help="also write the JSON results to this file")
    args = parser.parse_args()
    for m in args.modes:
        if m not in MODES:
            parser.error(f"unknown mode {m!r} (modes: {', '.join(MODES)})")
    started = time.perf_counter()
    results = asyncio.run(main_async(args))
    doc = {
        "model": args.model,
        "max_tokens": args.max_tokens,
        "temperature": args.temperature,
        "wall_s": round(time.perf_counter() - started, 1),
        "results": results,
    }
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=2)
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(table(results, args.model))


if __name__ == "__main__":
    main()
