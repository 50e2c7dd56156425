"""The online A/B harness: run each task cold and warm on a real model, and compare.

For every task and trial the two arms run back to back with the same seed (which arm
goes first, and the order of the (task, trial) pairs, are randomised from the
experiment's seed), each in a fresh episode of the tool environment, through
:class:`warmstart.runtime.Runtime`. The warm arm gets the template's warm history chosen
for the task's first user turn; the cold arm gets nothing. Every run is recorded in the
store as a session (source ``warmstart-eval``) and as an ``eval_runs`` row the moment it
ends, which is what ``--resume`` reads to skip finished runs.

Per run the harness measures, judging each call with the runtime's verdict *and* the
miner's judge (so a tool that returns ``{"exit_code": 1}`` counts as a failure, exactly
as it would when the session is mined later):

* error rate in the first 30 turns (failed calls / calls, turns 1-30);
* turns to the first successful call (a run without one counts as its turn limit + 1);
* total failed calls; tool diversity (distinct tools called successfully);
* task success, where the environment can check it;
* prompt and completion tokens, and cost from per-million-token prices.

A dead endpoint, 429s and 5xx the runtime could not retry, unreadable responses and
environment failures are stored too, as ``excluded`` runs with their reason: they say
nothing about warm starts, so they are left out of the comparison (and can be run again
with ``retry_errors``). Malformed tool-call JSON, unknown tools, tool exceptions and hung
tools are the model's and tools' behaviour, so they are measured.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from warmstart.evaluate.environments import Environment, Task, load_environment
from warmstart.evaluate.errors import EvaluationError
from warmstart.evaluate.stats import Interval, mean_interval, paired_test
from warmstart.evaluate.store import EvalStore
from warmstart.inject import render
from warmstart.mining.judge import judge_result
from warmstart.mining.select import Selector
from warmstart.runtime import RunResult, Runtime, allow_all, resolve_context_length
from warmstart.store import Store
from warmstart.tokens import message_tokens

log = logging.getLogger(__name__)

ARMS = ("cold", "warm")
FIRST_TURNS = 30
INFRA_STOPS = frozenset(
    {"endpoint_error", "bad_response", "context_too_small", "config_error", "internal_error"}
)
"""Stop reasons that say the run never really happened; such runs are excluded."""
IDENTITY = (
    "model",
    "tasks",
    "environment",
    "template",
    "template_version",
    "budget",
    "trials",
    "seed",
    "max_turns",
    "temperature",
)
"""Config fields a resumed experiment must keep: changing them would mix two designs."""

Progress = Callable[[int, int, Mapping[str, Any]], None]


@dataclass
class ABConfig:
    """One A/B experiment's design. Prices are USD per million tokens."""

    model: str
    tasks: str
    template: str
    endpoint: str | None = None
    environment: str = "workspace"
    trials: int = 1
    budget: int | None = None
    seed: int = 0
    max_turns: int = FIRST_TURNS
    price_in: float = 0.0
    price_out: float = 0.0
    context_length: int | None = None
    tool_timeout: float = 30.0
    request_timeout: float = 120.0
    temperature: float | None = None
    template_version: int | None = None
    name: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ABConfig:
        """A config from its stored form (unknown keys ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def check(self) -> None:
        """Raise :class:`EvaluationError` for values no experiment can use."""
        if self.trials < 1:
            raise EvaluationError(f"trials must be at least 1, got {self.trials}")
        if self.max_turns < 1:
            raise EvaluationError(f"max turns must be at least 1, got {self.max_turns}")
        if self.budget is not None and self.budget <= 0:
            raise EvaluationError(f"budget must be a positive token count, got {self.budget}")
        if self.price_in < 0 or self.price_out < 0:
            raise EvaluationError("prices cannot be negative")


@dataclass
class Experiment:
    """An A/B experiment as stored: its config, runs so far and summary."""

    id: str
    config: ABConfig
    status: str
    runs: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    ran_now: int = 0

    @property
    def complete(self) -> bool:
        """Whether every planned run is stored."""
        return self.status == "complete"


def unit_seed(seed: int, task_id: str, trial: int) -> int:
    """The seed both arms of one (task, trial) share: stable across runs and resumes."""
    digest = hashlib.sha256(f"{seed}:{task_id}:{trial}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def schedule(task_ids: Sequence[str], trials: int, seed: int) -> list[tuple[str, int, str]]:
    """Every ``(task, trial, arm)`` in run order: pairs shuffled, arms adjacent, each
    pair's first arm drawn at random (so neither arm always runs on a warmer cache)."""
    units = [(t, k) for t in task_ids for k in range(trials)]
    rng = np.random.default_rng(seed)
    order: list[tuple[str, int, str]] = []
    for i in rng.permutation(len(units)):
        task_id, trial = units[int(i)]
        arms = ARMS if rng.random() < 0.5 else ARMS[::-1]
        order.extend((task_id, trial, arm) for arm in arms)
    return order


class WarmSource:
    """The warm history for a task: the pinned template version, selected per task."""

    def __init__(self, store: Store, name: str, version: int | None, budget: int | None) -> None:
        self.store = store
        self.template = store.load_template(name, version)
        self.selector = Selector(self.template.examples)
        self.budget = budget or self.template.budget

    def __call__(self, task: str) -> list[dict[str, Any]]:
        examples = self.selector.select(self.budget, task)
        messages: list[dict[str, Any]] = render(examples, "openai")
        if self.template.id is not None:
            self.store.record_usage(
                self.template.id, task, len(examples), message_tokens(messages), "eval"
            )
        return messages


def _failed(call: Any) -> tuple[bool, str | None]:
    """A call failed if the runtime says so or the miner's judge reads its result so."""
    if not call.ok:
        return True, call.error_kind or "error"
    verdict = judge_result(call.result, call.tool, None)
    return (not verdict.ok), verdict.kind


def measure(results: Sequence[RunResult]) -> dict[str, Any]:
    """The per-run numbers from the runtime results of one episode's user turns."""
    offset = 0
    calls = errors = calls_30 = errors_30 = 0
    first_success: int | None = None
    tools: set[str] = set()
    kinds: Counter[str] = Counter()
    for result in results:
        for call in result.calls:
            turn = offset + call.turn
            failed, kind = _failed(call)
            calls += 1
            if turn <= FIRST_TURNS:
                calls_30 += 1
                errors_30 += failed
            if failed:
                errors += 1
                kinds[kind or "error"] += 1
            else:
                tools.add(call.tool)
                if first_success is None:
                    first_success = turn
        offset += result.turns
    return {
        "turns": offset,
        "calls": calls,
        "calls_30": calls_30,
        "errors_30": errors_30,
        "total_errors": errors,
        "first_success_turn": first_success,
        "distinct_tools": len(tools),
        "prompt_tokens": sum(r.usage.prompt_tokens for r in results),
        "completion_tokens": sum(r.usage.completion_tokens for r in results),
        "error_kinds": dict(kinds),
    }


class _Harness:
    """Runs the missing runs of one experiment, storing each as it ends."""

    def __init__(
        self,
        ident: str,
        config: ABConfig,
        env: Environment,
        warm: WarmSource,
        store: EvalStore,
        api_key: str | None,
        context_length: int | None,
    ) -> None:
        self.id = ident
        self.config = config
        self.env = env
        self.warm = warm
        self.store = store
        self.api_key = api_key
        self.context_length = context_length
        self.tasks = {t.id: t for t in env.tasks}

    def attempt(self, task: Task, trial: int, arm: str, position: int) -> dict[str, Any]:
        """One episode of one arm; never raises for anything the model or tools do."""
        started = time.time()
        seed = unit_seed(self.config.seed, task.id, trial)
        results: list[RunResult] = []
        detail: str | None = None
        success: bool | None = None
        stop = None
        meta = {
            "experiment": self.id,
            "task_id": task.id,
            "trial": trial,
            "environment": self.config.environment,
            "template": self.config.template if arm == "warm" else None,
        }
        try:
            warm = self.warm(task.prompt) if arm == "warm" else []
        except Exception as exc:  # a warm arm run cold would poison the comparison
            detail = f"warm history failed: {type(exc).__name__}: {exc}"
            stop = "warm_history_error"
            warm = []
        if detail is None:
            try:
                success, stop = self._episode(task, arm, seed, warm, meta, results)
            except Exception as exc:  # the environment broke: data, not a crash
                log.warning("environment failure in %s/%s/%s: %s", task.id, trial, arm, exc)
                detail = f"environment failed: {type(exc).__name__}: {exc}"
                stop = "environment_error"
        excluded = detail is not None or any(r.stop_reason in INFRA_STOPS for r in results)
        if stop is None:
            stop = results[-1].stop_reason if results else "no_run"
        run = {
            "task_id": task.id,
            "trial": trial,
            "arm": arm,
            "position": position,
            "seed": seed,
            "status": "excluded" if excluded else "measured",
            "stop_reason": stop,
            "user_turns": len(task.turns),
            "success": success,
            "warm_tokens": results[0].warm_tokens if results and arm == "warm" else 0,
            "run_errors": [asdict(e) for r in results for e in r.errors][:20],
            "session_ids": [f"warmstart-eval:{r.run_id}" for r in results if r.recorded],
            "detail": detail,
            "started_at": started,
            "ended_at": time.time(),
            **measure(results),
        }
        return run

    def _episode(
        self,
        task: Task,
        arm: str,
        seed: int,
        warm: list[dict[str, Any]],
        meta: dict[str, Any],
        results: list[RunResult],
    ) -> tuple[bool | None, str | None]:
        with self.env.episode(task) as episode:
            runtime = Runtime(
                episode.tools,
                model=self.config.model,
                base_url=self.config.endpoint,
                api_key=self.api_key,
                approval=allow_all,
                max_turns=self.config.max_turns,
                tool_timeout=self.config.tool_timeout,
                request_timeout=self.config.request_timeout,
                context_length=self.context_length,
                warm_share=1.0,  # the template budget bounds the warm part; the rest is history
                temperature=self.config.temperature,
            )
            history: list[dict[str, Any]] = []
            for index, prompt in enumerate(task.turns):
                result = runtime.run(
                    prompt,
                    system=episode.system,
                    warm=[*warm, *history],
                    whitelist=episode.tools.names(),
                    arm=arm,
                    seed=seed,
                    metadata={**meta, "turn_index": index},
                )
                result.record(self.store.url)
                results.append(result)
                if result.stop_reason in INFRA_STOPS:
                    return None, result.stop_reason
                history.extend(result.messages[result.warm_start + result.warm_count :])
                episode.after_turn(index, result)
            return episode.check(), None


def _metric_values(run: Mapping[str, Any], config: ABConfig) -> dict[str, float | None]:
    calls_30 = int(run.get("calls_30") or 0)
    first = run.get("first_success_turn")
    limit = config.max_turns * int(run.get("user_turns") or 1) + 1
    prompt = int(run.get("prompt_tokens") or 0)
    completion = int(run.get("completion_tokens") or 0)
    success = run.get("success")
    return {
        "error_rate_30": int(run.get("errors_30") or 0) / calls_30 if calls_30 else None,
        "turns_to_first_success": float(first) if first is not None else float(limit),
        "total_errors": float(run.get("total_errors") or 0),
        "tool_diversity": float(run.get("distinct_tools") or 0),
        "success": None if success is None else float(bool(success)),
        "tokens": float(prompt + completion),
        "cost": (prompt * config.price_in + completion * config.price_out) / 1e6,
    }


METRICS = {
    "error_rate_30": "error rate, first 30 turns",
    "turns_to_first_success": "turns to first success",
    "total_errors": "total errors",
    "tool_diversity": "tool diversity",
    "success": "task success",
    "tokens": "tokens",
    "cost": "cost (USD)",
}


def summarize_runs(
    runs: Sequence[Mapping[str, Any]],
    config: ABConfig,
    planned: int | None = None,
    resamples: int = 2000,
) -> dict[str, Any]:
    """Per-arm means with 95 % intervals (tasks resampled) and a paired test per metric.

    Only ``measured`` runs count; a (task, trial) enters the paired test when both of
    its arms were measured and the metric is defined for both.
    """
    arms: dict[str, Any] = {}
    values: dict[str, dict[tuple[str, int], dict[str, float | None]]] = {a: {} for a in ARMS}
    for arm in ARMS:
        mine = [r for r in runs if r["arm"] == arm]
        excluded = [r for r in mine if r["status"] != "measured"]
        arms[arm] = {
            "runs": len(mine),
            "measured": len(mine) - len(excluded),
            "excluded": len(excluded),
            "excluded_by": dict(Counter(str(r["stop_reason"]) for r in excluded)),
        }
        for r in mine:
            if r["status"] == "measured":
                values[arm][(r["task_id"], int(r["trial"]))] = _metric_values(r, config)
    metrics = []
    for key, label in METRICS.items():
        per_arm: dict[str, Interval] = {}
        for arm in ARMS:
            units = sorted(values[arm])
            per_arm[arm] = mean_interval(
                [values[arm][u][key] for u in units],
                [u[0] for u in units],
                resamples=resamples,
                seed=config.seed,
            )
        pairs = sorted(set(values["cold"]) & set(values["warm"]))
        paired = paired_test(
            [values["cold"][u][key] for u in pairs],
            [values["warm"][u][key] for u in pairs],
            [u[0] for u in pairs],
            interval_resamples=resamples,
            seed=config.seed,
        )
        metrics.append(
            {
                "metric": key,
                "label": label,
                "cold": per_arm["cold"].as_dict(),
                "warm": per_arm["warm"].as_dict(),
                "paired": paired.as_dict(),
            }
        )
    done = len(runs)
    return {
        "planned": planned if planned is not None else done,
        "done": done,
        "complete": planned is not None and done >= planned,
        "arms": arms,
        "metrics": metrics,
    }


def _check_resume(stored: ABConfig, given: ABConfig | None) -> ABConfig:
    if given is None:
        return stored
    different = [
        f"{name} ({getattr(stored, name)!r} stored, {getattr(given, name)!r} given)"
        for name in IDENTITY
        if name != "template_version" and getattr(given, name) != getattr(stored, name)
    ]
    if different:
        raise EvaluationError("cannot resume with a different design: " + "; ".join(different))
    merged = ABConfig.from_dict({**asdict(given), "template_version": stored.template_version})
    return merged


def run_experiment(
    config: ABConfig | None = None,
    *,
    db: str | None = None,
    api_key: str | None = None,
    resume: str | None = None,
    max_runs: int | None = None,
    retry_errors: bool = False,
    progress: Progress | None = None,
) -> Experiment:
    """Run (or resume) an A/B experiment; returns it with its summary.

    ``resume`` continues a stored experiment, skipping every stored run; ``config`` may
    then be None (the stored design is used) or must match it on :data:`IDENTITY` (the
    endpoint, key, prices and timeouts may change). ``retry_errors`` first forgets the
    excluded runs so they run again. ``max_runs`` stops after that many new runs,
    leaving the experiment resumable. Runs are stored one by one, so an interruption
    (even ``KeyboardInterrupt``) loses only the run in flight.
    """
    store = EvalStore(db)
    if resume is not None:
        stored = store.experiment(resume)
        if stored["kind"] != "ab":
            raise EvaluationError(f"experiment {stored['id']} is {stored['kind']}, not an A/B one")
        ident = stored["id"]
        config = _check_resume(ABConfig.from_dict(stored["config"]), config)
    elif config is None:
        raise EvaluationError("give an experiment config, or the id of one to resume")
    else:
        ident = ""
    config.check()
    env = load_environment(config.environment, config.tasks)
    warm = WarmSource(store.store, config.template, config.template_version, config.budget)
    if not ident:
        config.template_version = warm.template.version
        ident = store.create_experiment("ab", asdict(config), config.name)
    elif resume is not None:
        store.update_experiment(ident, status="running")
    context = None
    found = resolve_context_length(
        config.model, config.endpoint, config.context_length, api_key=api_key
    )
    if found is not None:
        context = found.length
    harness = _Harness(ident, config, env, warm, store, api_key, context)
    plan = schedule([t.id for t in env.tasks], config.trials, config.seed)
    stored_runs = store.runs(ident)
    if retry_errors:
        store.delete_runs(
            ident,
            [
                (r["task_id"], r["trial"], r["arm"])
                for r in stored_runs
                if r["status"] != "measured"
            ],
        )
        stored_runs = store.runs(ident)
    done = {(r["task_id"], int(r["trial"]), r["arm"]) for r in stored_runs}
    unknown = {u[0] for u in done} - set(harness.tasks)
    if unknown:
        raise EvaluationError(
            f"experiment {ident} has runs of tasks the task list no longer has: "
            + ", ".join(sorted(unknown)[:5])
        )
    ran = 0
    try:
        for position, (task_id, trial, arm) in enumerate(plan):
            if (task_id, trial, arm) in done:
                continue
            if max_runs is not None and ran >= max_runs:
                break
            run = harness.attempt(harness.tasks[task_id], trial, arm, position)
            store.add_run(ident, run)
            ran += 1
            if progress:
                progress(len(done) + ran, len(plan), run)
    finally:
        runs = store.runs(ident)
        summary = summarize_runs(runs, config, planned=len(plan))
        status = "complete" if summary["complete"] else "running"
        store.update_experiment(ident, status=status, summary=summary)
    return Experiment(ident, config, status, runs, summary, ran)


def load_experiment(ident: str, db: str | None = None) -> Experiment:
    """A stored A/B experiment with its runs and a freshly computed summary."""
    store = EvalStore(db)
    stored = store.experiment(ident)
    if stored["kind"] != "ab":
        raise EvaluationError(f"experiment {stored['id']} is {stored['kind']}, not an A/B one")
    config = ABConfig.from_dict(stored["config"])
    runs = store.runs(stored["id"])
    planned = (stored.get("summary") or {}).get("planned")
    summary = summarize_runs(runs, config, planned=planned)
    return Experiment(stored["id"], config, stored["status"], runs, summary)


def summary_table(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Rows for a printed table: metric, each arm, the difference, p-value, pairs."""
    from warmstart.evaluate.stats import fmt_interval

    def interval(data: Mapping[str, Any]) -> Interval:
        return Interval(data["estimate"], data["low"], data["high"], data["n"], data["groups"])

    rows = []
    for m in summary.get("metrics", []):
        paired = m["paired"]
        p = paired.get("p_value")
        rows.append(
            {
                "metric": m["label"],
                "cold": fmt_interval(interval(m["cold"])),
                "warm": fmt_interval(interval(m["warm"])),
                "warm - cold": fmt_interval(interval(paired["difference"])),
                "p": "-" if p is None else f"{p:.3g}",
                "pairs": paired["n"],
            }
        )
    return rows
