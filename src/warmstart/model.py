"""The plain data that flows through warmstart: sessions in, examples and templates out.

Sources produce :class:`Session` objects; mining turns them into :class:`MinedCall`
rows and :class:`SessionStats`; building a template turns mined calls into redacted
:class:`Example` objects grouped in a :class:`Template`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class ToolCallSpec:
    """One tool call as an assistant message carries it (arguments stay a JSON string)."""

    id: str | None
    name: str
    arguments: str


@dataclass
class Message:
    """One chat message in OpenAI shape, decoded from whatever the source stored."""

    role: str
    content: str | None
    tool_calls: list[ToolCallSpec] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    timestamp: float | None = None


@dataclass
class Session:
    """One agent session from one source, ready to be mined and stored."""

    source: str
    external_id: str
    messages: list[Message]
    tools: list[str] | None = None
    outcome: float | None = None
    model: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    end_reason: str | None = None
    title: str | None = None
    origin: str = ""
    fingerprint: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The store's id for this session: ``source:external_id``."""
        return f"{self.source}:{self.external_id}"


@dataclass
class MinedCall:
    """A tool call paired with its result and judged from it, evidence kept."""

    index: int
    call_id: str
    tool: str
    arguments: str
    args_valid: bool
    turn: int
    message_index: int
    result: str | None
    result_chars: int
    paired_by: str
    ok: bool
    error_kind: str | None
    evidence: str | None
    intent: str | None
    timestamp: float | None = None
    trivial: bool = False
    retry_of: int | None = None
    recovered_by: int | None = None


@dataclass
class SessionStats:
    """Per-session counts the miner derives; stored on the session row."""

    messages: int
    calls: int
    failures: int
    distinct_tools: int
    first_success_turn: int | None
    recoveries: int
    task_type: str


@dataclass
class Example:
    """One redacted tool call with its intent and result, optionally a recovery pair.

    A recovery example shows the failed call and its error first, then the fix.
    """

    tool: str
    intent: str
    arguments: str
    result: str
    result_chars: int
    ok: bool = True
    session_key: str = ""
    task_type: str = "mixed"
    failed_arguments: str | None = None
    failed_result: str | None = None
    error_kind: str | None = None
    tokens: int = 0
    tool_error_rate: float = 0.0
    id: int | None = None

    @property
    def is_recovery(self) -> bool:
        """Whether this example teaches a pitfall and its fix."""
        return self.failed_arguments is not None


@dataclass
class Template:
    """A named, tagged, versioned set of examples."""

    name: str
    examples: list[Example]
    version: int = 1
    task_type: str = "mixed"
    tags: list[str] = field(default_factory=list)
    description: str = ""
    budget: int = 2000
    source_sessions: list[str] = field(default_factory=list)
    created_at: float | None = None
    usage_count: int = 0
    example_count: int = 0
    id: int | None = None
