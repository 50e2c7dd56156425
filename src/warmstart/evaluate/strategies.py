"""The ways of choosing a warm history that offline evaluation compares.

All of them see only the train side and fill the same token budget (counted as the
selector counts: :func:`warmstart.mining.examples.example_tokens` per example):

* ``naive``: how the first design of this idea worked. Calls in store order from the
  longest ("marathon") sessions first, failed or not, until the budget is full.
* ``random-k``: the baseline τ-bench ships: the calls of randomly drawn successful
  trajectories (outcome 1.0, or no failed call where outcomes are unknown); a fresh
  draw per test session, seeded, so the baseline's own variance shows in its interval.
* ``warmstart``: the core selector over a template built exactly as ``warmstart build``
  builds one (:func:`collect_pool`, then the 64 best candidates), without a task text;
* ``warmstart+task``: the same with the test session's first user message as the task.

Every example keeps the miner's verdict in ``Example.ok`` whatever the strategy did with
it, so scoring can tell a demonstrated success from a demonstrated failure; each
selection also says which (tool, error kind) fixes it shows (:class:`Shown`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from warmstart.evaluate.errors import EvaluationError
from warmstart.mining.examples import collect_pool, materialize
from warmstart.mining.select import Selector
from warmstart.model import Example

STRATEGIES = ("naive", "random-k", "warmstart", "warmstart+task")
TEMPLATE_EXAMPLES = 64
"""Candidates a template keeps: ``warmstart build --max-examples`` default."""
MAX_SKIPS = 50
"""Consecutive examples too big for what is left before a fill gives up."""

Row = dict[str, Any]


@dataclass
class TrainSide:
    """The train sessions (store rows) and their mined calls, by session id."""

    sessions: list[Row]
    calls: dict[str, list[Row]] = field(default_factory=dict)

    def session_rows(self, ids: Sequence[str]) -> list[Row]:
        """Calls of ``ids`` in that order, each session's calls in call order."""
        return [row for sid in ids for row in self.calls.get(sid, ())]


class ExampleCache:
    """Redacted examples made from call rows, each made once (redaction is the cost)."""

    def __init__(self) -> None:
        self._made: dict[tuple[str, int], Example] = {}

    def get(self, row: Row) -> Example:
        """The example for one mined call row, as a warm history would show it."""
        key = (row["session_id"], int(row["idx"]))
        ex = self._made.get(key)
        if ex is None:
            ex = materialize(
                Example(
                    tool=row["tool"],
                    intent=row.get("intent") or "",
                    arguments=row["arguments_json"],
                    result=row.get("result") or "",
                    result_chars=int(row.get("result_chars") or 0),
                    ok=bool(row["ok"]),
                    session_key=row["session_id"],
                    task_type=row.get("task_type") or "mixed",
                    error_kind=row.get("error_kind"),
                )
            )
            self._made[key] = ex
        return ex


Fix = tuple[str, str | None]
"""A tool and an error kind that a warm history shows being fixed."""


@dataclass
class Shown:
    """A warm history as scoring sees it: its examples, and the fixes it demonstrates.

    A fix is shown by a recovery example (failure, error, then the fix), or, in a history
    of raw calls, by a failed call *and* the call the miner paired with it as its
    recovery both being in the history, so ``naive`` and ``random-k`` get credit for
    fixes they happen to include.
    """

    examples: list[Example]
    fixes: frozenset[Fix] = frozenset()

    @classmethod
    def of(cls, examples: list[Example]) -> Shown:
        """Examples whose recovery pairs are the only fixes shown (the selector's case)."""
        fixes = frozenset((ex.tool, ex.error_kind) for ex in examples if ex.is_recovery)
        return cls(examples, fixes)


def fill(rows: Sequence[Row], budget: int, cache: ExampleCache) -> Shown:
    """First fit in order: take each example that still fits, skip those that do not.

    Gives up after :data:`MAX_SKIPS` misses in a row so a huge store is not redacted
    whole for one budget. Calls whose arguments are not a JSON object are skipped: no
    provider accepts them in a history.
    """
    chosen: list[Example] = []
    taken: list[Row] = []
    left = budget
    misses = 0
    for row in rows:
        if row.get("trivial") or not row.get("args_valid", True):
            continue
        ex = cache.get(row)
        if ex.tokens <= left:
            chosen.append(ex)
            taken.append(row)
            left -= ex.tokens
            misses = 0
        else:
            misses += 1
            if misses >= MAX_SKIPS:
                break
    keys = {(r["session_id"], int(r["idx"])) for r in taken}
    fixes = frozenset(
        (r["tool"], r.get("error_kind"))
        for r in taken
        if not r["ok"]
        and r.get("recovered_by") is not None
        and (r["session_id"], int(r["recovered_by"])) in keys
    )
    return Shown(chosen, fixes)


class Strategy:
    """A named way to pick a warm history; ``select`` is called once per test session."""

    name = ""
    uses_task = False
    varies = False
    """Whether the choice differs between test sessions (random draws, task text)."""

    def select(self, budget: int, task: str | None, draw: int) -> Shown:
        """The history within ``budget`` tokens; ``draw`` numbers the test session."""
        raise NotImplementedError


class Naive(Strategy):
    """Calls in store order from the longest sessions first, no outcome judging."""

    name = "naive"

    def __init__(self, train: TrainSide, cache: ExampleCache) -> None:
        order = sorted(train.sessions, key=lambda s: (-int(s.get("n_messages") or 0), s["id"]))
        self._rows = train.session_rows([s["id"] for s in order])
        self._cache = cache

    def select(self, budget: int, task: str | None, draw: int) -> Shown:
        return fill(self._rows, budget, self._cache)


def successful(session: Mapping[str, Any], outcomes_known: bool) -> bool:
    """A successful trajectory: full reward, or (no outcomes at all) no failed call."""
    if outcomes_known:
        outcome = session.get("outcome")
        return outcome is not None and float(outcome) >= 1.0
    return int(session.get("n_failures") or 0) == 0 and int(session.get("n_calls") or 0) > 0


class RandomK(Strategy):
    """The calls of ``k`` random successful trajectories (all that fit when ``k`` is None)."""

    name = "random-k"
    varies = True

    def __init__(
        self, train: TrainSide, cache: ExampleCache, seed: int = 0, k: int | None = None
    ) -> None:
        known = any(s.get("outcome") is not None for s in train.sessions)
        self._ids = sorted(s["id"] for s in train.sessions if successful(s, known))
        self._train = train
        self._cache = cache
        self._seed = seed
        self._k = k

    def select(self, budget: int, task: str | None, draw: int) -> Shown:
        if not self._ids:
            return Shown([])
        rng = np.random.default_rng([self._seed, draw])
        picked = [self._ids[i] for i in rng.permutation(len(self._ids))]
        if self._k is not None:
            picked = picked[: self._k]
        return fill(self._train.session_rows(picked), budget, self._cache)


class Warmstart(Strategy):
    """The core selector over a template built from the train side."""

    def __init__(self, selector: Selector | None, uses_task: bool) -> None:
        self.name = "warmstart+task" if uses_task else "warmstart"
        self.uses_task = uses_task
        self.varies = uses_task
        self._selector = selector

    @staticmethod
    def template_selector(train: TrainSide) -> Selector | None:
        """What ``warmstart build`` would store, as a selector (None: nothing to show)."""
        ids = sorted(s["id"] for s in train.sessions)
        pool = collect_pool(train.session_rows(ids))
        if not pool.examples:
            return None
        candidates = Selector(pool.examples).select(budget=10**9, max_examples=TEMPLATE_EXAMPLES)
        return Selector(candidates)

    def select(self, budget: int, task: str | None, draw: int) -> Shown:
        if self._selector is None:
            return Shown([])
        return Shown.of(self._selector.select(budget, task if self.uses_task else None))


def build_strategies(
    names: Sequence[str], train: TrainSide, seed: int = 0, random_k: int | None = None
) -> list[Strategy]:
    """The strategies called ``names``, sharing one example cache and one template."""
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown:
        raise EvaluationError(
            f"unknown strategy {unknown[0]!r}; choose from {', '.join(STRATEGIES)}"
        )
    cache = ExampleCache()
    selector: Selector | None = None
    if any(n.startswith("warmstart") for n in names):
        selector = Warmstart.template_selector(train)
    makers: dict[str, Callable[[], Strategy]] = {
        "naive": lambda: Naive(train, cache),
        "random-k": lambda: RandomK(train, cache, seed, random_k),
        "warmstart": lambda: Warmstart(selector, uses_task=False),
        "warmstart+task": lambda: Warmstart(selector, uses_task=True),
    }
    return [makers[n]() for n in dict.fromkeys(names)]
