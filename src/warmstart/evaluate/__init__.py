"""Evaluate warm starts: offline replay on a stored corpus, online A/B runs on a model.

Warm starts are a hypothesis (fewer early tool errors, a sooner first success, wider
tool use); this package lets a user test it on their own logs and model::

    from warmstart.evaluate import evaluate_offline, run_experiment
    report = evaluate_offline("sqlite:///store.db", source="tau-bench")
    experiment = run_experiment(ABConfig(...))

Names are imported lazily: the store's migrations import :mod:`warmstart.evaluate.schema`
whenever a database is opened, and that must not pull in the runtime or the HTTP client.
See ``docs/evaluate.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from warmstart.evaluate.ab import (
        ABConfig,
        Experiment,
        load_experiment,
        run_experiment,
        summarize_runs,
    )
    from warmstart.evaluate.environments import (
        Environment,
        EnvironmentUnavailable,
        Episode,
        Task,
        environment_names,
        load_environment,
        register_environment,
    )
    from warmstart.evaluate.errors import EvaluationError
    from warmstart.evaluate.offline import OfflineConfig, OfflineReport, evaluate_offline
    from warmstart.evaluate.split import Split, split_by_task
    from warmstart.evaluate.stats import Interval, PairedResult, paired_test, ratio_interval
    from warmstart.evaluate.store import EvalStore

_EXPORTS = {
    "ABConfig": "warmstart.evaluate.ab",
    "EvalStore": "warmstart.evaluate.store",
    "EvaluationError": "warmstart.evaluate.errors",
    "Environment": "warmstart.evaluate.environments",
    "EnvironmentUnavailable": "warmstart.evaluate.environments",
    "Episode": "warmstart.evaluate.environments",
    "Experiment": "warmstart.evaluate.ab",
    "Interval": "warmstart.evaluate.stats",
    "load_experiment": "warmstart.evaluate.ab",
    "OfflineConfig": "warmstart.evaluate.offline",
    "OfflineReport": "warmstart.evaluate.offline",
    "PairedResult": "warmstart.evaluate.stats",
    "Split": "warmstart.evaluate.split",
    "Task": "warmstart.evaluate.environments",
    "environment_names": "warmstart.evaluate.environments",
    "evaluate_offline": "warmstart.evaluate.offline",
    "load_environment": "warmstart.evaluate.environments",
    "paired_test": "warmstart.evaluate.stats",
    "ratio_interval": "warmstart.evaluate.stats",
    "register_environment": "warmstart.evaluate.environments",
    "run_experiment": "warmstart.evaluate.ab",
    "split_by_task": "warmstart.evaluate.split",
    "summarize_runs": "warmstart.evaluate.ab",
}

__all__ = [
    "ABConfig",
    "Environment",
    "EnvironmentUnavailable",
    "Episode",
    "EvalStore",
    "EvaluationError",
    "Experiment",
    "Interval",
    "OfflineConfig",
    "OfflineReport",
    "PairedResult",
    "Split",
    "Task",
    "environment_names",
    "evaluate_offline",
    "load_environment",
    "load_experiment",
    "paired_test",
    "ratio_interval",
    "register_environment",
    "run_experiment",
    "split_by_task",
    "summarize_runs",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'warmstart.evaluate' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
