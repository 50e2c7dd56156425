"""The one-line action summary: successful writes only, stale results skipped."""

from __future__ import annotations

import json
from typing import Any

from warmstart.review import format_summary, summarize_actions


def assistant(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": cid, "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for cid, name, args in calls
        ],
    }  # fmt: skip


def result(call_id: str | None, body: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "tool", "content": json.dumps(body)}
    if call_id:
        message["tool_call_id"] = call_id
    if name:
        message["name"] = name
    return message


CREATED = {
    "success": True,
    "message": "Skill 'deploy' created.",
    "action": "create",
    "name": "deploy",
}
PRIOR = [
    {"role": "user", "content": "deploy it"},
    assistant(("old_1", "skill_manage", {"action": "create", "name": "deploy"})),
    result("old_1", CREATED),
    result(None, {"success": True, "message": "Entry added in USER.md.", "target": "user"},
           name="memory"),
]  # fmt: skip


def test_stale_results_from_the_snapshot_are_skipped() -> None:
    review = [
        *PRIOR,
        {"role": "user", "content": "Review the conversation above"},
        assistant(("new_1", "memory", {"target": "memory", "action": "add", "content": "x"})),
        result("new_1", {"success": True, "message": "Entry added.", "target": "memory"}),
    ]  # fmt: skip
    assert summarize_actions(review, PRIOR) == ["Memory updated"]
    # without the snapshot to compare against, the inherited results would be reported
    assert summarize_actions(review, []) == [
        "Skill 'deploy' created", "User profile updated", "Memory updated",
    ]  # fmt: skip


def test_a_reused_call_id_with_new_content_is_still_reported() -> None:
    patched = {"success": True, "message": "Patched SKILL.md", "action": "patch", "name": "deploy"}
    review = [
        *PRIOR,
        assistant(("old_1", "skill_manage", {"action": "patch", "name": "deploy"})),
        result("old_1", patched),
    ]
    assert summarize_actions(review, PRIOR) == ["Skill 'deploy' patched"]


def test_only_successful_memory_and_skill_writes_count() -> None:
    review = [
        assistant(
            ("c1", "memory", {"target": "user", "action": "add", "content": "x"}),
            ("c2", "skill_manage", {"action": "patch", "name": "deploy"}),
            ("c3", "skill_view", {"name": "deploy"}),
            ("c4", "terminal", {"command": "ls"}),
            ("c5", "memory", {"target": "memory", "action": "add", "content": "dup"}),
            ("c6", "skill_manage", {"action": "write_file", "name": "deploy",
                                    "file_path": "references/a.md"}),
        ),
        result("c1", {"success": False, "message": "over the limit"}),
        result("c2", {"success": True, "message": "Patched", "action": "patch", "name": "deploy"}),
        result("c3", {"success": True, "message": "Contents of SKILL.md"}),
        {"role": "tool", "tool_call_id": "c4", "content": "Error: tool 'terminal' is not allowed"},
        result("c5", {"success": True, "message": "Entry already exists", "changed": False}),
        result("c6", {"success": True, "message": "File written", "action": "write_file",
                      "name": "deploy", "file_path": "references/a.md"}),
    ]  # fmt: skip
    actions = summarize_actions(review)
    assert actions == ["Skill 'deploy' patched", "Skill 'deploy' file 'references/a.md' written"]


def test_staged_writes_say_so_and_duplicates_collapse() -> None:
    review = [
        assistant(("a", "memory", {"target": "user"}), ("b", "memory", {"target": "user"})),
        result("a", {"success": True, "staged": True, "pending_id": "1", "message": "Staged"}),
        result("b", {"success": True, "staged": True, "pending_id": "2", "message": "Staged"}),
    ]
    assert summarize_actions(review) == ["User profile change staged for approval"]


def test_format_summary() -> None:
    line = format_summary(["Memory updated", "Skill 'deploy-checklist' created"])
    assert line == "Self-improvement review: Memory updated · Skill 'deploy-checklist' created"
    assert format_summary([]) is None
