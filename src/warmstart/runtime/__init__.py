"""A minimal, real agent loop over any OpenAI-compatible endpoint.

``Runtime(tools, model=..., base_url=...).run(task, warm=..., whitelist=...)`` sends the
task (with an optional warm history and a runtime hint), executes the tool calls the
model makes through a :class:`ToolRegistry` (whitelist, approval hook, per-tool timeout)
and returns a :class:`RunResult` in which every failure is data. The context-window
guard (:func:`check_context`, :func:`model_context_length`, :func:`warm_budget`) lives in
:mod:`warmstart.runtime.context`. See ``docs/runtime.md``.
"""

from __future__ import annotations

from warmstart.runtime.approval import (
    ApprovalHook,
    Decision,
    ToolRequest,
    allow_all,
    default_approval,
    deny_all,
    is_unattended,
)
from warmstart.runtime.budget import Shrinker, count_tokens, drop_examples_to_fit
from warmstart.runtime.context import (
    BUILTIN_CONTEXT_LENGTHS,
    ContextLength,
    check_context,
    model_context_length,
    resolve_context_length,
    warm_budget,
)
from warmstart.runtime.endpoint import Endpoint, resolve_endpoint
from warmstart.runtime.loop import Runtime, WarmSource, run_agent, runtime_hint
from warmstart.runtime.result import CallRecord, RunError, RunResult, StopReason, Usage
from warmstart.runtime.tools import Tool, ToolOutcome, ToolRegistry, run_tool

__all__ = [
    "BUILTIN_CONTEXT_LENGTHS",
    "ApprovalHook",
    "CallRecord",
    "ContextLength",
    "Decision",
    "Endpoint",
    "RunError",
    "RunResult",
    "Runtime",
    "Shrinker",
    "StopReason",
    "Tool",
    "ToolOutcome",
    "ToolRegistry",
    "ToolRequest",
    "Usage",
    "WarmSource",
    "allow_all",
    "check_context",
    "count_tokens",
    "default_approval",
    "deny_all",
    "drop_examples_to_fit",
    "is_unattended",
    "model_context_length",
    "resolve_context_length",
    "resolve_endpoint",
    "run_agent",
    "run_tool",
    "runtime_hint",
    "warm_budget",
]
