"""What an A/B tool environment is: tasks, and a fresh set of tools per attempt.

The harness runs each task twice per trial (cold and warm), so every attempt needs its
own state (a new temporary directory, new BFCL class instances): an :class:`Episode`.
After each user turn the episode may inspect the run (BFCL checks its state per turn);
after the last one :meth:`Episode.check` says whether the task was achieved, or None
when the environment cannot tell.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from warmstart.runtime import RunResult, ToolRegistry


@dataclass
class Task:
    """One task: its user turns (one for most environments, several for BFCL)."""

    id: str
    turns: list[str]
    system: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def prompt(self) -> str:
        """The first user turn: what warm-history selection sees as the task text."""
        return self.turns[0]


class Episode(ABC):
    """One attempt at one task, with tools bound to its own private state."""

    tools: ToolRegistry
    system: str | None = None

    def after_turn(self, index: int, result: RunResult) -> None:  # noqa: B027
        """Called after user turn ``index`` has run (default: nothing to check)."""

    def check(self) -> bool | None:
        """Whether the task was achieved; None when this environment cannot tell."""
        return None

    def close(self) -> None:  # noqa: B027
        """Release the attempt's state (temporary files, instances)."""

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Environment(ABC):
    """A named set of tasks and the means to attempt each one in isolation."""

    name: str = ""
    tasks: list[Task]

    @abstractmethod
    def episode(self, task: Task) -> Episode:
        """A fresh attempt at ``task``."""

    def describe(self) -> dict[str, Any]:
        """What the experiment records about this environment."""
        return {"environment": self.name, "tasks": len(self.tasks)}
