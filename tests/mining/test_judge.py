"""The outcome judge: evidence kinds, strongest first, and no false alarms."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warmstart.mining.judge import judge_result, retry_verdict, soft_failure


@pytest.mark.parametrize(
    ("result", "kind"),
    [
        ('{"success": false, "error": "no such user"}', "json-success-false"),
        ('{"ok": false}', "json-ok-false"),
        ('{"error": "rate limited"}', "json-error"),
        ('{"exit_code": 2, "output": ""}', "exit-code"),
        ('{"status": "error"}', "json-status"),
        ("Traceback (most recent call last):\n  File x\nValueError: bad", "traceback"),
        ("Error: payment amount does not add up", "error-prefix"),
        ("ERROR something broke", "error-prefix"),
        ("Exception: boom", "error-prefix"),
        ("FileNotFoundError: [Errno 2] No such file", "error-prefix"),
        ("command output...\nexit code: 127", "exit-code"),
    ],
)
def test_failures_are_judged_with_their_evidence(result: str, kind: str) -> None:
    verdict = judge_result(result, "tool", None)
    assert not verdict.ok
    assert verdict.kind == kind
    assert verdict.evidence


@pytest.mark.parametrize(
    "result",
    [
        '{"user_id": "mia_li_3668", "name": {"first_name": "Mia"}}',
        '{"success": true, "error": null}',
        '{"exit_code": 0}',
        "[]",
        "The flight HAT136 departs at 14:00. No errors reported by the system.",
        "exit code: 0",
        "",
    ],
)
def test_successes_are_not_flagged(result: str) -> None:
    assert judge_result(result, "tool", None).ok


def test_unknown_tool_and_missing_result() -> None:
    verdict = judge_result("fine", "rm_rf", frozenset({"read_file"}))
    assert (verdict.ok, verdict.kind) == (False, "unknown-tool")
    assert judge_result(None, "read_file", None).kind == "no-result"


def test_retry_counts_only_after_a_soft_failure() -> None:
    assert retry_verdict('{"a": 1}', '{"a": 2}', "[]") is not None
    assert retry_verdict('{"a": 1}', '{"a": 2}', "user not found") is not None
    # Iterating over ids with good results is not a retry failure.
    assert retry_verdict('{"id": 1}', '{"id": 2}', '{"id": 1, "status": "ok"}') is None
    # Same arguments again is a repeat, not a changed-arguments retry.
    assert retry_verdict('{"a": 1}', '{"a": 1}', "[]") is None
    assert soft_failure("") and not soft_failure('{"flights": ["HAT001"]}')


@given(st.text(max_size=400))
def test_judge_never_raises_and_always_explains_failures(text: str) -> None:
    verdict = judge_result(text, "tool", None)
    assert verdict.ok or verdict.kind


@given(st.dictionaries(st.text(max_size=10), st.integers() | st.text(max_size=10), max_size=5))
def test_json_without_failure_keys_is_ok(obj: dict[str, object]) -> None:
    obj = {
        k: v
        for k, v in obj.items()
        if k
        not in (
            "success",
            "ok",
            "error",
            "exit_code",
            "returncode",
            "exitCode",
            "exit_status",
            "status",
        )
    }
    assert judge_result(json.dumps(obj), "tool", None).ok
