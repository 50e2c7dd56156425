"""Split a stored corpus into train and test sides by task, reproducibly.

Offline scores are only honest when the test side is unseen: several trials of one
τ-bench task share the user, the reservation and the right calls, so a split by session
would leak the answer from train to test. Sessions are grouped by their task
(``metadata["task_id"]`` where a source records it, else each session alone) and whole
groups are shuffled with a seeded generator.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from warmstart.evaluate.errors import EvaluationError


def task_key(session: Mapping[str, Any]) -> str:
    """The group a stored session belongs to: its source and task id, else its own id."""
    meta = session.get("metadata") or {}
    task = meta.get("task_id") if isinstance(meta, Mapping) else None
    if task is None or task == "":
        return str(session["id"])
    return f"{session.get('source', '')}:{task}"


@dataclass
class Split:
    """Which sessions are train and which test, and the task group of each."""

    train: list[str]
    test: list[str]
    groups: dict[str, str] = field(default_factory=dict)
    seed: int = 0
    test_share: float = 0.25

    @property
    def train_groups(self) -> set[str]:
        """Task groups on the train side."""
        return {self.groups[s] for s in self.train}

    @property
    def test_groups(self) -> set[str]:
        """Task groups on the test side."""
        return {self.groups[s] for s in self.test}

    def as_dict(self) -> dict[str, Any]:
        """Sizes and settings, for the stored experiment config."""
        return {
            "seed": self.seed,
            "test_share": self.test_share,
            "train_sessions": len(self.train),
            "test_sessions": len(self.test),
            "train_tasks": len(self.train_groups),
            "test_tasks": len(self.test_groups),
        }


def split_by_task(
    sessions: Iterable[Mapping[str, Any]], test_share: float = 0.25, seed: int = 0
) -> Split:
    """Put ``test_share`` of the task groups (at least one) on the test side.

    Deterministic for a given seed and set of sessions, whatever order they come in.
    Raises :class:`EvaluationError` when there are fewer than two groups.
    """
    if not 0 < test_share < 1:
        raise EvaluationError(f"test share must be between 0 and 1, got {test_share}")
    groups = {str(s["id"]): task_key(s) for s in sessions}
    names = sorted(set(groups.values()))
    if len(names) < 2:
        raise EvaluationError(
            f"need sessions from at least two tasks to split train from test, found {len(names)}"
        )
    order = np.random.default_rng(seed).permutation(len(names))
    n_test = min(len(names) - 1, max(1, math.ceil(test_share * len(names) - 1e-9)))
    test_groups = {names[i] for i in order[:n_test]}
    ids = sorted(groups)
    return Split(
        train=[s for s in ids if groups[s] not in test_groups],
        test=[s for s in ids if groups[s] in test_groups],
        groups=groups,
        seed=seed,
        test_share=test_share,
    )
