"""Background review: after a turn, save what the conversation taught as memories and skills.

Warm templates carry *how to call tools*; memories and skills carry *who the user is*
and *how to do a class of task*. A :class:`Reviewer` replays the conversation on a
background thread with only the memory and skill tools, and writes to stores that use
Hermes Agent's formats (``memories/MEMORY.md``, ``memories/USER.md``,
``skills/[category/]NAME/SKILL.md``)::

    from warmstart.review import ReviewConfig, Reviewer
    from warmstart.runtime import Runtime

    reviewer = Reviewer(ReviewConfig(memory_every=5), callback=print)
    runtime = Runtime(tools, model="qwen2.5-7b-instruct", reviewer=reviewer)
    runtime.run("Deploy the staging branch")    # a review starts when one is due
    reviewer.review_now(messages, kind="both")  # or review right now, synchronously

See ``docs/review.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from warmstart.review.config import ReviewConfig, ReviewKind, packaged_prompt, resolve_home
    from warmstart.review.errors import (
        MemoryFileError,
        MemoryWriteError,
        PendingError,
        ReviewError,
        SkillWriteError,
        StoreWriteError,
    )
    from warmstart.review.memory_store import ENTRY_DELIMITER, MemoryChange, MemoryOp, MemoryStore
    from warmstart.review.pending import PendingStore
    from warmstart.review.provenance import Provenance, ProvenanceLog
    from warmstart.review.reviewer import Reviewer, ReviewOutcome
    from warmstart.review.safety import REVIEW_TOOLS, dangerous_command, review_approval
    from warmstart.review.skill_store import SkillChange, SkillInfo, SkillStore, split_front_matter
    from warmstart.review.summary import format_summary, summarize_actions
    from warmstart.review.tools import ReviewTools
    from warmstart.review.triggers import Triggers, TurnStats

__all__ = [
    "ENTRY_DELIMITER",
    "REVIEW_TOOLS",
    "MemoryChange",
    "MemoryFileError",
    "MemoryOp",
    "MemoryStore",
    "MemoryWriteError",
    "PendingError",
    "PendingStore",
    "Provenance",
    "ProvenanceLog",
    "ReviewConfig",
    "ReviewError",
    "ReviewKind",
    "ReviewOutcome",
    "ReviewTools",
    "Reviewer",
    "SkillChange",
    "SkillInfo",
    "SkillStore",
    "SkillWriteError",
    "StoreWriteError",
    "Triggers",
    "TurnStats",
    "dangerous_command",
    "format_summary",
    "packaged_prompt",
    "resolve_home",
    "review_approval",
    "split_front_matter",
    "summarize_actions",
]

_LAZY = {
    "ENTRY_DELIMITER": "warmstart.review.memory_store",
    "MemoryChange": "warmstart.review.memory_store",
    "MemoryFileError": "warmstart.review.errors",
    "MemoryOp": "warmstart.review.memory_store",
    "MemoryStore": "warmstart.review.memory_store",
    "MemoryWriteError": "warmstart.review.errors",
    "PendingError": "warmstart.review.errors",
    "PendingStore": "warmstart.review.pending",
    "Provenance": "warmstart.review.provenance",
    "ProvenanceLog": "warmstart.review.provenance",
    "REVIEW_TOOLS": "warmstart.review.safety",
    "ReviewConfig": "warmstart.review.config",
    "ReviewError": "warmstart.review.errors",
    "ReviewKind": "warmstart.review.config",
    "ReviewOutcome": "warmstart.review.reviewer",
    "ReviewTools": "warmstart.review.tools",
    "Reviewer": "warmstart.review.reviewer",
    "SkillChange": "warmstart.review.skill_store",
    "SkillInfo": "warmstart.review.skill_store",
    "SkillStore": "warmstart.review.skill_store",
    "SkillWriteError": "warmstart.review.errors",
    "StoreWriteError": "warmstart.review.errors",
    "Triggers": "warmstart.review.triggers",
    "TurnStats": "warmstart.review.triggers",
    "dangerous_command": "warmstart.review.safety",
    "format_summary": "warmstart.review.summary",
    "packaged_prompt": "warmstart.review.config",
    "resolve_home": "warmstart.review.config",
    "review_approval": "warmstart.review.safety",
    "split_front_matter": "warmstart.review.skill_store",
    "summarize_actions": "warmstart.review.summary",
}
"""Public name -> module. Loaded on first use so ``import warmstart.review.memory_store``
(a Hermes plugin, a CLI command, a subprocess) does not pay for the runtime and the
``openai`` client, which only the reviewer needs."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
