"""How fast is a warm history built for a task from a template of 100,000 examples?

Builds a store whose template holds N examples (default 100,000, shaped like the
τ-bench airline corpus shipped in the package: real tools, intents and arguments,
varied), then times ``warm_history(name, task=..., budget=2000)`` for a set of task
texts. Prints the first (cold: load + index) call, the median and p95 of the warm
calls, and the median against the 5 ms target.

    python benchmarks/select_bench.py [--examples 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import warmstart
from warmstart.cli.demo import sample_path
from warmstart.mining.examples import example_tokens
from warmstart.model import Template
from warmstart.store import Store
from warmstart.templates import warm_history

TARGET_MS = 5.0
TASKS = [
    "I want to change my flight to May 20",
    "cancel my reservation please",
    "add two checked bags to my booking",
    "book a one way flight from New York to Seattle",
    "what is the status of my reservation",
    "upgrade my cabin to business class",
    "I need a refund for the cancelled flight",
    "update the passenger name on my ticket",
    "use my gift card to pay the difference",
    "transfer me to a human agent",
]
WORDS = [
    "please",
    "also",
    "today",
    "tomorrow",
    "urgent",
    "kindly",
    "again",
    "thanks",
    "now",
    "quickly",
]


def build_store(db: str, n: int, seed: int) -> None:
    """Ingest the sample, then save a template of ``n`` varied examples from its calls."""
    warmstart.ingest(sample_path(), db=db)
    base = warmstart.build_template("seed", db, max_examples=10_000)
    rng = random.Random(seed)
    examples = []
    for i in range(n):
        ex = base.examples[i % len(base.examples)]
        intent = f"{ex.intent} {' '.join(rng.sample(WORDS, 3))} #{i}"
        clone = replace(ex, intent=intent, id=None)
        clone.tokens = example_tokens(clone) if i < len(base.examples) else ex.tokens + 6
        examples.append(clone)
    Store(db).save_template(Template(name="big", examples=examples, budget=2000))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="warmstart-select-bench-"))
    db = f"sqlite:///{folder / 'bench.db'}"
    t0 = time.perf_counter()
    build_store(db, args.examples, args.seed)
    print(
        f"store with a template of {args.examples:,} examples built in "
        f"{time.perf_counter() - t0:.1f} s ({folder})"
    )
    t0 = time.perf_counter()
    warm_history("big", task=TASKS[0], budget=2000, db=db, record=False)
    cold = (time.perf_counter() - t0) * 1000
    times = []
    for q in range(args.queries):
        task = TASKS[q % len(TASKS)]
        t0 = time.perf_counter()
        msgs = warm_history("big", task=task, budget=2000, db=db, record=False)
        times.append((time.perf_counter() - t0) * 1000)
        assert msgs
    # The selection alone, without loading the template row from the store:
    from warmstart.templates import _SELECTORS

    sel = next(iter(_SELECTORS.values()))[1]
    pure = []
    for q in range(args.queries):
        t0 = time.perf_counter()
        sel.select(2000, TASKS[q % len(TASKS)])
        pure.append((time.perf_counter() - t0) * 1000)
    median = statistics.median(times)
    p95 = sorted(times)[int(0.95 * len(times)) - 1]
    print(f"first call (load {args.examples:,} examples + build index): {cold:,.0f} ms")
    print(f"warm_history median: {median:.2f} ms, p95: {p95:.2f} ms over {args.queries} tasks")
    print(f"  of which selection alone: median {statistics.median(pure):.2f} ms")
    print(
        f"target: median <= {TARGET_MS} ms -> ratio {median / TARGET_MS:.2f} of target: "
        f"{'PASS' if median <= TARGET_MS else 'FAIL'}"
    )
    return 0 if median <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
