"""The approval protocol: a hook sees each tool request before it runs and decides.

``ApprovalHook = Callable[[ToolRequest], Decision]``. A hook answers in one of three ways:

* ``Decision.allow()``: the tool runs.
* ``Decision.deny(reason)``: nothing runs; the model gets a tool result saying why.
* ``Decision.hold(wait)``: a human (or the approval gate) must decide. The runtime calls
  ``wait(timeout)``, which blocks until the decision arrives and returns ``allow``/``deny``,
  or ``None`` when ``timeout`` seconds pass first (the runtime then denies). Holding this
  way, instead of blocking inside the hook, lets the runtime bound the wait, time it and
  record that the call was held.

A hook may also simply block inside its own body and return ``allow``/``deny``; that works
too, but the wait is then neither bounded nor recorded as a hold.

Nobody to ask
-------------
When a run has no hook, :func:`default_approval` decides: it allows on the main thread
(the program that started the run is the operator) and denies on any other thread,
because a run on a worker thread (a proxy, a scheduler, the background review) has no
human present to have consented. ``ToolRequest.unattended`` carries that fact, computed as
``threading.current_thread() is not threading.main_thread()`` on the thread that called
:meth:`Runtime.run`, so a custom hook can apply the same rule. Unattended runs over
sandboxed tools (an A/B evaluation) pass :func:`allow_all` explicitly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Verdict = Literal["allow", "deny", "hold"]
HoldWait = Callable[[float | None], "Decision | None"]


@dataclass(frozen=True)
class ToolRequest:
    """What a hook sees: the call, its parsed arguments and where the run stands."""

    tool: str
    arguments: Mapping[str, Any]
    call_id: str
    run_id: str
    turn: int
    model: str
    task: str
    unattended: bool


@dataclass(frozen=True)
class Decision:
    """A hook's answer; build one with :meth:`allow`, :meth:`deny` or :meth:`hold`."""

    verdict: Verdict
    reason: str = ""
    wait: HoldWait | None = field(default=None, compare=False)

    @classmethod
    def allow(cls, reason: str = "") -> Decision:
        """Run the tool."""
        return cls("allow", reason)

    @classmethod
    def deny(cls, reason: str) -> Decision:
        """Do not run the tool; ``reason`` is shown to the model."""
        return cls("deny", reason)

    @classmethod
    def hold(cls, wait: HoldWait, reason: str = "") -> Decision:
        """Wait for a decision: ``wait(timeout)`` blocks and returns it, or None on timeout."""
        return cls("hold", reason, wait)


ApprovalHook = Callable[[ToolRequest], Decision]


def is_unattended() -> bool:
    """Whether the current thread is not the main thread (so no human is watching it)."""
    return threading.current_thread() is not threading.main_thread()


def default_approval(request: ToolRequest) -> Decision:
    """Allow on the main thread, deny on worker threads (see the module docstring)."""
    if request.unattended:
        return Decision.deny(
            "no approver: the run is on a worker thread and no approval hook is configured"
        )
    return Decision.allow()


def allow_all(request: ToolRequest) -> Decision:
    """Approve everything: for sandboxed tools and unattended evaluations."""
    return Decision.allow()


def deny_all(request: ToolRequest) -> Decision:
    """Refuse everything: a dry run that shows which calls the model would make."""
    return Decision.deny("all tool calls are denied in this run")
