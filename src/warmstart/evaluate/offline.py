"""Offline replay evaluation: which strategy's warm history would have helped the test side?

No model is needed. The corpus is split by task (:mod:`warmstart.evaluate.split`); every
strategy (:mod:`warmstart.evaluate.strategies`) sees only the train side and picks a warm
history per test session at each budget; the history is scored against what the test
session actually did:

* **tool recall**: of the distinct tools the test session used successfully, the share
  the warm history demonstrates *succeeding* (a shown failure does not count);
* **error coverage**: of the test side's failed calls, the share whose tool is shown
  succeeding *and* whose error kind (for that tool) is shown fixed by a recovery pair
  (a recovery example, or a failed call and its paired fix both in a raw history);
* **error tool coverage**: the looser half of that: failed calls whose tool is shown
  succeeding at all;
* **tokens**: what the rendered history costs (OpenAI messages, without the addendum);
* **examples**: how many examples it holds.

Recall and tokens are means over test sessions, the coverages pooled over failed calls.
Intervals are 95 % percentile bootstraps that resample whole tasks (trials of one task
are not independent).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from warmstart.evaluate.errors import EvaluationError
from warmstart.evaluate.split import Split, split_by_task
from warmstart.evaluate.stats import DEFAULT_RESAMPLES, Interval, fmt_interval, ratio_interval
from warmstart.evaluate.store import EvalStore
from warmstart.evaluate.strategies import (
    STRATEGIES,
    Shown,
    Strategy,
    TrainSide,
    build_strategies,
)
from warmstart.inject import to_openai
from warmstart.store import SessionFilter
from warmstart.tokens import message_tokens

BUDGETS = (500, 1000, 2000, 4000)
METRICS = ("tool_recall", "error_coverage", "error_tool_coverage", "tokens", "examples")
METRIC_LABELS = {
    "tool_recall": "tool recall",
    "error_coverage": "error coverage",
    "error_tool_coverage": "error tool cov.",
    "tokens": "tokens",
    "examples": "examples",
}

Progress = Callable[[int, int], None]


@dataclass
class OfflineConfig:
    """What to compare: strategies, budgets, the split and the bootstrap."""

    budgets: tuple[int, ...] = BUDGETS
    strategies: tuple[str, ...] = STRATEGIES
    test_share: float = 0.25
    seed: int = 0
    resamples: int = DEFAULT_RESAMPLES
    source: str | None = None
    random_k: int | None = None


@dataclass
class TestSession:
    """What one test session did: the truth a warm history is scored against."""

    id: str
    group: str
    task: str
    ok_tools: frozenset[str]
    failures: list[tuple[str, str | None]]


@dataclass
class SessionScore:
    """One strategy's warm history for one test session at one budget, scored."""

    session_id: str
    group: str
    strategy: str
    budget: int
    recall: float | None
    failed: int
    covered: int
    covered_tool: int
    tokens: int
    examples: int


@dataclass
class Score:
    """One cell of the table: a metric of a strategy at a budget, with its interval."""

    strategy: str
    budget: int
    metric: str
    interval: Interval

    def as_row(self) -> dict[str, Any]:
        """Flat form for the store and ``--json``."""
        return {
            "strategy": self.strategy,
            "budget": self.budget,
            "metric": self.metric,
            "estimate": self.interval.estimate,
            "low": self.interval.low,
            "high": self.interval.high,
            "n": self.interval.n,
        }


@dataclass
class OfflineReport:
    """Scores per strategy, budget and metric, with the split and per-session detail."""

    config: OfflineConfig
    split: Split
    scores: list[Score]
    sessions: list[SessionScore] = field(default_factory=list)
    experiment_id: str | None = None

    def score(self, strategy: str, budget: int, metric: str) -> Interval:
        """The interval of one cell; :class:`KeyError` when it was not computed."""
        for s in self.scores:
            if (s.strategy, s.budget, s.metric) == (strategy, budget, metric):
                return s.interval
        raise KeyError((strategy, budget, metric))

    def table(self) -> list[dict[str, Any]]:
        """One row per budget and strategy, each metric as ``estimate [low, high]``."""
        return score_table([s.as_row() for s in self.scores])

    def markdown(self) -> str:
        """The table as GitHub Markdown (for a README)."""
        return markdown_table(self.table())

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form: config, split sizes, scores."""
        return {
            "experiment_id": self.experiment_id,
            "config": asdict(self.config),
            "split": self.split.as_dict(),
            "scores": [s.as_row() for s in self.scores],
        }


def score_table(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Stored score rows (strategy, budget, metric, estimate, low, high, n) as table rows,
    by budget then strategy in the order first seen."""
    cells: dict[tuple[str, int], dict[str, Any]] = {}
    for row in rows:
        key = (str(row["strategy"]), int(row["budget"]))
        cell = cells.setdefault(key, {"strategy": key[0], "budget": key[1]})
        metric = str(row["metric"])
        interval = Interval(row["estimate"], row["low"], row["high"], int(row["n"] or 0), 0)
        digits = 4 if metric in ("tokens", "examples") else 3
        cell[METRIC_LABELS.get(metric, metric)] = fmt_interval(interval, digits)
    strategies = list(dict.fromkeys(k[0] for k in cells))
    budgets = sorted({k[1] for k in cells})
    return [cells[(s, b)] for b in budgets for s in strategies if (s, b) in cells]


def markdown_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Rows as a GitHub Markdown table."""
    if not rows:
        return ""
    head = list(rows[0])
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(str(r.get(h, "")) for h in head) + " |" for r in rows]
    return "\n".join(lines)


def score_history(shown: Shown, truth: TestSession) -> tuple[float | None, int, int, int]:
    """``(recall, failed, covered, covered_tool)`` of one warm history for one session."""
    shown_ok = {ex.tool for ex in shown.examples if ex.ok}
    recall = len(truth.ok_tools & shown_ok) / len(truth.ok_tools) if truth.ok_tools else None
    covered_tool = sum(1 for tool, _ in truth.failures if tool in shown_ok)
    covered = sum(
        1 for tool, kind in truth.failures if tool in shown_ok and (tool, kind) in shown.fixes
    )
    return recall, len(truth.failures), covered, covered_tool


def _load(store: EvalStore, config: OfflineConfig) -> tuple[Split, TrainSide, list[TestSession]]:
    flt = SessionFilter(source=config.source)
    sessions = store.store.list_sessions(flt)
    if not sessions:
        which = f" from source {config.source!r}" if config.source else ""
        raise EvaluationError(f"no sessions{which} in the store to evaluate on")
    split = split_by_task(sessions, config.test_share, config.seed)
    train_ids, test_ids = set(split.train), set(split.test)
    train = TrainSide(sessions=[s for s in sessions if s["id"] in train_ids])
    test_calls: dict[str, list[dict[str, Any]]] = {sid: [] for sid in split.test}
    for row in store.store.iter_calls(flt):
        sid = row["session_id"]
        if sid in train_ids:
            train.calls.setdefault(sid, []).append(row)
        elif sid in test_ids:
            test_calls[sid].append(row)
    tasks = store.first_user_messages(split.test)
    truth = []
    for sid in split.test:
        calls = [r for r in test_calls[sid] if not r["trivial"]]
        truth.append(
            TestSession(
                id=sid,
                group=split.groups[sid],
                task=tasks.get(sid, ""),
                ok_tools=frozenset(r["tool"] for r in calls if r["ok"]),
                failures=[(r["tool"], r["error_kind"]) for r in calls if not r["ok"]],
            )
        )
    return split, train, truth


def _score_all(
    strategies: Sequence[Strategy],
    budgets: Sequence[int],
    truth: Sequence[TestSession],
    progress: Progress | None,
) -> list[SessionScore]:
    out: list[SessionScore] = []
    total = len(strategies) * len(budgets)
    done = 0
    for strategy in strategies:
        for budget in budgets:
            fixed: tuple[Shown, int] | None = None
            for draw, session in enumerate(truth):
                if strategy.varies or fixed is None:
                    task = session.task if strategy.uses_task else None
                    shown = strategy.select(budget, task, draw)
                    tokens = message_tokens(to_openai(shown.examples, addendum=None))
                    if not strategy.varies:
                        fixed = (shown, tokens)
                else:
                    shown, tokens = fixed
                recall, failed, covered, covered_tool = score_history(shown, session)
                out.append(
                    SessionScore(
                        session_id=session.id,
                        group=session.group,
                        strategy=strategy.name,
                        budget=budget,
                        recall=recall,
                        failed=failed,
                        covered=covered,
                        covered_tool=covered_tool,
                        tokens=tokens,
                        examples=len(shown.examples),
                    )
                )
            done += 1
            if progress:
                progress(done, total)
    return out


def aggregate(
    rows: Sequence[SessionScore], resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> list[Score]:
    """Table cells from per-session scores, bootstrapped over task groups."""
    cells: dict[tuple[str, int], list[SessionScore]] = {}
    for row in rows:
        cells.setdefault((row.strategy, row.budget), []).append(row)
    scores = []
    for (strategy, budget), items in cells.items():
        groups = [r.group for r in items]
        with_recall = [r for r in items if r.recall is not None]
        parts: dict[str, tuple[list[float], list[float], list[str]]] = {
            "tool_recall": (
                [float(r.recall or 0.0) for r in with_recall],
                [1.0] * len(with_recall),
                [r.group for r in with_recall],
            ),
            "error_coverage": (
                [float(r.covered) for r in items],
                [float(r.failed) for r in items],
                groups,
            ),
            "error_tool_coverage": (
                [float(r.covered_tool) for r in items],
                [float(r.failed) for r in items],
                groups,
            ),
            "tokens": ([float(r.tokens) for r in items], [1.0] * len(items), groups),
            "examples": ([float(r.examples) for r in items], [1.0] * len(items), groups),
        }
        for metric in METRICS:
            num, den, grp = parts[metric]
            interval = ratio_interval(num, den, grp, resamples=resamples, seed=seed)
            scores.append(Score(strategy, budget, metric, interval))
    return scores


def evaluate_offline(
    db: str | None = None,
    config: OfflineConfig | None = None,
    *,
    save: bool = True,
    progress: Progress | None = None,
) -> OfflineReport:
    """Split the store's sessions by task, score every strategy at every budget.

    With ``save`` the scores are stored as an ``offline`` experiment (see
    ``warmstart eval show``) and its id set on the report.
    """
    config = config or OfflineConfig()
    if not config.budgets or any(b <= 0 for b in config.budgets):
        raise EvaluationError("budgets must be positive token counts")
    store = EvalStore(db)
    split, train, truth = _load(store, config)
    strategies = build_strategies(config.strategies, train, config.seed, config.random_k)
    config.strategies = tuple(s.name for s in strategies)
    rows = _score_all(strategies, config.budgets, truth, progress)
    report = OfflineReport(
        config=config,
        split=split,
        scores=aggregate(rows, config.resamples, config.seed),
        sessions=rows,
    )
    if save:
        ident = store.create_experiment(
            "offline", {"config": asdict(config), "split": split.as_dict()}
        )
        store.save_scores(ident, [s.as_row() for s in report.scores])
        store.update_experiment(ident, status="complete", summary=report.as_dict())
        report.experiment_id = ident
    return report
