"""Turn one session into mined calls and per-session counts.

Every tool call is paired with its result by ``tool_call_id``; a result whose id
matches nothing pending is paired by position (the oldest unanswered call) and
recorded as such. Each call is judged from its result (:mod:`warmstart.mining.judge`),
retries are linked, and a failed call followed within ``recovery_window`` turns by
a successful call of the same tool becomes a *recovery pair*.
"""

from __future__ import annotations

import itertools
import json

from warmstart.config import MiningConfig
from warmstart.mining.classify import classify
from warmstart.mining.judge import judge_result, retry_verdict
from warmstart.model import MinedCall, Session, SessionStats

INTENT_CHARS = 400


def _valid_args(arguments: str) -> bool:
    try:
        return isinstance(json.loads(arguments), dict)
    except (ValueError, RecursionError):
        return False


def mine_session(session: Session, config: MiningConfig) -> tuple[list[MinedCall], SessionStats]:
    """Pair, judge and link every call of ``session``; count what happened."""
    calls: list[MinedCall] = []
    results: list[str | None] = []
    pending: list[int] = []
    turn = -1
    intent: str | None = None
    trivial = set(config.trivial_tools)
    limit = config.result_chars
    for mi, msg in enumerate(session.messages):
        role = msg.role
        if role == "user":
            if msg.content:
                intent = msg.content[:INTENT_CHARS]
        elif role == "assistant":
            turn += 1
            pending.clear()
            for spec in msg.tool_calls:
                index = len(calls)
                calls.append(
                    MinedCall(
                        index=index,
                        call_id=spec.id or f"call_{index}",
                        tool=spec.name,
                        arguments=spec.arguments,
                        args_valid=_valid_args(spec.arguments),
                        turn=turn,
                        message_index=mi,
                        result=None,
                        result_chars=0,
                        paired_by="none",
                        ok=True,
                        error_kind=None,
                        evidence=None,
                        intent=intent,
                        timestamp=msg.timestamp,
                        trivial=spec.name in trivial,
                    )
                )
                results.append(None)
                pending.append(index)
        elif role == "tool" and pending:
            chosen = None
            if msg.tool_call_id:
                for pos, ci in enumerate(pending):
                    if calls[ci].call_id == msg.tool_call_id:
                        chosen = pending.pop(pos)
                        calls[chosen].paired_by = "id"
                        break
            if chosen is None:
                chosen = pending.pop(0)
                calls[chosen].paired_by = "position"
            content = msg.content or ""
            results[chosen] = content
            call = calls[chosen]
            call.result_chars = len(content)
            call.result = content if len(content) <= limit else content[:limit]

    known = frozenset(session.tools) if session.tools else None
    for call, full in zip(calls, results, strict=True):
        if not call.args_valid:
            call.ok, call.error_kind = False, "bad-arguments"
            call.evidence = "arguments are not a JSON object"
            continue
        verdict = judge_result(full if call.paired_by != "none" else None, call.tool, known)
        call.ok, call.error_kind, call.evidence = verdict.ok, verdict.kind, verdict.evidence

    # Retries: the same tool called again right after with changed arguments.
    for prev, nxt in itertools.pairwise(calls):
        if prev.tool != nxt.tool or prev.trivial:
            continue
        if prev.arguments != nxt.arguments:
            nxt.retry_of = prev.index
            if prev.ok:
                retry = retry_verdict(prev.arguments, nxt.arguments, results[prev.index])
                if retry is not None:
                    prev.ok, prev.error_kind, prev.evidence = False, retry.kind, retry.evidence

    # Recovery pairs: a failure fixed by a later success of the same tool.
    window = config.recovery_window
    for call in calls:
        if call.ok or call.trivial:
            continue
        for later in calls[call.index + 1 :]:
            if later.turn - call.turn > window:
                break
            if later.tool == call.tool and later.ok:
                call.recovered_by = later.index
                break

    counted = [c for c in calls if not c.trivial]
    first_ok = next((c.turn for c in counted if c.ok), None)
    stats = SessionStats(
        messages=len(session.messages),
        calls=len(counted),
        failures=sum(1 for c in counted if not c.ok),
        distinct_tools=len({c.tool for c in counted}),
        first_success_turn=first_ok,
        recoveries=sum(1 for c in counted if c.recovered_by is not None),
        task_type=classify((c.tool for c in counted), config),
    )
    return calls, stats
