"""The review tools as the model sees them: schemas, JSON results, errors, staging, provenance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.review.helpers import DEPLOY_SKILL

from warmstart.review import (
    REVIEW_TOOLS,
    MemoryStore,
    PendingError,
    PendingStore,
    Provenance,
    ProvenanceLog,
    ReviewTools,
)
from warmstart.review.tools import SCHEMAS
from warmstart.runtime import Decision, ToolRegistry, ToolRequest


def call(tools: ReviewTools, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = tools.functions()[name](args)
    assert isinstance(result, str)
    data = json.loads(result)
    assert isinstance(data["success"], bool) and isinstance(data["message"], str)
    return data


@pytest.fixture
def tools(home: Path) -> ReviewTools:
    return ReviewTools.at_home(home, provenance=Provenance("background_review", "s1", "p0", "cli"))


def test_schemas_are_openai_function_schemas_named_like_hermes(home: Path) -> None:
    registry = ToolRegistry()
    ReviewTools.at_home(home).register(registry)
    assert registry.names() == list(REVIEW_TOOLS)
    for name, schema in SCHEMAS.items():
        wire = registry.get(name).schema  # type: ignore[union-attr]
        assert wire == {"type": "function", "function": schema}
        assert schema["parameters"]["type"] == "object"
        assert set(schema["parameters"].get("required", [])) <= set(
            schema["parameters"]["properties"]
        )
    memory_props = SCHEMAS["memory"]["parameters"]["properties"]
    assert {"target", "operations", "action", "content", "old_text"} == set(memory_props)
    assert SCHEMAS["skill_manage"]["parameters"]["properties"]["action"]["enum"] == [
        "create", "patch", "edit", "delete", "write_file", "remove_file",
    ]  # fmt: skip


def test_memory_batch_result_and_limit_error(tools: ReviewTools, home: Path) -> None:
    ok = call(
        tools,
        "memory",
        {"target": "user", "operations": [
            {"action": "add", "content": "Name: Ada."},
            {"action": "add", "content": "Likes terse answers."},
        ]},
    )  # fmt: skip
    assert ok["success"] and ok["message"] == "Applied 2 operations to USER.md."
    assert ok["entry_count"] == 2 and ok["usage"].endswith("/1,375 chars")
    refused = call(tools, "memory", {"target": "user", "action": "add", "content": "z" * 1_400})
    assert refused["success"] is False and refused["error"] == refused["message"]
    assert "would hold" in refused["message"]
    assert refused["current_entries"] == ["Name: Ada.", "Likes terse answers."]
    assert MemoryStore.at_home(home).entries("user") == ["Name: Ada.", "Likes terse answers."]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"target": "bogus", "action": "add", "content": "x"}, "invalid target 'bogus'"),
        ({"target": "memory"}, "give 'operations'"),
        ({"target": "memory", "operations": "add x"}, "operations must be a list"),
        ({"target": "memory", "operations": [42]}, "operation 1 must be an object"),
        ({"target": "memory", "action": "add", "content": ["x"]}, "content must be a string"),
        ({"target": "memory", "action": "replace", "content": "x"}, "old_text is required"),
    ],
)
def test_malformed_memory_calls_get_clear_errors(
    tools: ReviewTools, home: Path, args: dict[str, Any], message: str
) -> None:
    data = call(tools, "memory", args)
    assert data["success"] is False and message in data["message"]
    assert not (home / "memories" / "MEMORY.md").exists()


def test_skill_manage_actions_and_errors(tools: ReviewTools, home: Path) -> None:
    created = call(
        tools, "skill_manage", {"action": "create", "name": "deploy-checklist",
                                "content": DEPLOY_SKILL, "category": "devops"},
    )  # fmt: skip
    assert created == {
        "success": True,
        "message": "Skill 'deploy-checklist' created.",
        "action": "create",
        "name": "deploy-checklist",
        "path": "devops/deploy-checklist",
    }
    listed = call(tools, "skills_list", {})
    assert listed["skills"] == [{"name": "deploy-checklist", "category": "devops",
                                 "description": "Deploy a service to staging safely."}]  # fmt: skip
    viewed = call(tools, "skill_view", {"name": "deploy-checklist"})
    assert viewed["content"] == DEPLOY_SKILL
    cases: list[tuple[dict[str, Any], str]] = [
        ({"action": "explode", "name": "deploy-checklist"}, "unknown action 'explode'"),
        ({"action": "patch"}, "name is required"),
        ({"action": "patch", "name": "deploy-checklist", "old_string": 3, "new_string": ""},
         "old_string is required"),
        ({"action": "write_file", "name": "deploy-checklist", "file_path": "../../x",
          "file_content": "x"}, "without '..'"),
        ({"action": "delete", "name": "../../etc"}, "must not contain"),
    ]  # fmt: skip
    for args, message in cases:
        data = call(tools, "skill_manage", args)
        assert data["success"] is False and message in data["message"], args
    assert (
        home / "skills" / "devops" / "deploy-checklist" / "SKILL.md"
    ).read_text() == DEPLOY_SKILL


def test_tracked_calls_record_full_provenance(tools: ReviewTools, home: Path) -> None:
    hook = tools.track(lambda request: Decision.allow())
    args = {"target": "memory", "action": "add", "content": "Staging is stg-01."}
    request = ToolRequest("memory", args, "call_7", "run", 1, "m", "task", unattended=True)
    assert hook(request).verdict == "allow"
    call(tools, "memory", args)
    call(tools, "memory", {"target": "memory", "action": "add", "content": "Untracked call."})
    rows = ProvenanceLog.at_home(home).records()
    assert [(r["content"], r["tool_call_id"]) for r in rows] == [
        ("Staging is stg-01.", "call_7"),
        ("Untracked call.", None),
    ]
    assert {k: rows[0][k] for k in ("write_origin", "session_id", "parent_session_id",
                                    "platform", "subsystem", "action", "target")} == {
        "write_origin": "background_review", "session_id": "s1", "parent_session_id": "p0",
        "platform": "cli", "subsystem": "memory", "action": "add", "target": "memory",
    }  # fmt: skip


def test_a_denied_call_does_not_leak_its_id_to_a_later_call(tools: ReviewTools, home: Path) -> None:
    hook = tools.track(lambda request: Decision.deny("no"))
    args = {"target": "memory", "action": "add", "content": "x"}
    hook(ToolRequest("memory", args, "call_denied", "run", 1, "m", "t", unattended=True))
    call(tools, "memory", args)
    assert ProvenanceLog.at_home(home).records()[0]["tool_call_id"] is None


def test_write_approval_stages_in_hermes_format_and_approve_applies(home: Path) -> None:
    staging = ReviewTools.at_home(
        home, provenance=Provenance("background_review", "s9"), write_approval=True
    )
    staged = call(staging, "memory", {"target": "user", "action": "add", "content": "Name: Ada."})
    assert staged["success"] and staged["staged"] is True
    skill = call(staging, "skill_manage", {"action": "create", "name": "deploy-checklist",
                                           "content": DEPLOY_SKILL})  # fmt: skip
    assert skill["staged"] is True
    assert MemoryStore.at_home(home).entries("user") == []
    assert list(home.rglob("SKILL.md")) == []

    record_file = home / "pending" / "memory" / f"{staged['pending_id']}.json"
    record = json.loads(record_file.read_text())
    assert set(record) >= {"id", "subsystem", "action", "summary", "origin", "created_at",
                           "payload"}  # fmt: skip
    assert record["payload"] == {  # Hermes' shape, None included
        "action": "add", "target": "user", "content": "Name: Ada.", "old_text": None,
    }  # fmt: skip
    assert record["origin"] == "background_review"
    assert [r["id"] for r in PendingStore(home).records()] == [
        staged["pending_id"],
        skill["pending_id"],
    ]

    approver = ReviewTools.at_home(home, provenance=Provenance("user_cli"))
    assert approver.apply_pending(staged["pending_id"])["message"] == "Entry added in USER.md."
    approver.apply_pending(skill["pending_id"])
    assert MemoryStore.at_home(home).entries("user") == ["Name: Ada."]
    assert (home / "skills" / "deploy-checklist" / "SKILL.md").read_text() == DEPLOY_SKILL
    assert PendingStore(home).records() == []
    applied = [r for r in ProvenanceLog.at_home(home).records() if r["status"] == "applied"]
    assert [(r["write_origin"], r["session_id"], r.get("approved")) for r in applied] == [
        ("background_review", "s9", True),
        ("background_review", "s9", True),
    ]
    with pytest.raises(PendingError, match="no pending write"):
        approver.apply_pending(staged["pending_id"])


def test_write_approval_refuses_doomed_writes_instead_of_staging(home: Path) -> None:
    staging = ReviewTools.at_home(home, write_approval=True)
    data = call(staging, "memory", {"target": "memory", "action": "remove", "old_text": "ghost"})
    assert data["success"] is False and "no entry contains 'ghost'" in data["message"]
    assert PendingStore(home).records() == []


def test_approval_of_a_write_that_no_longer_applies_keeps_it_pending(home: Path) -> None:
    staging = ReviewTools.at_home(home, write_approval=True, memory_limit=30)
    MemoryStore.at_home(home, memory_limit=30).add("memory", "a" * 10)
    staged = call(staging, "memory", {"target": "memory", "action": "add", "content": "b" * 15})
    MemoryStore.at_home(home, memory_limit=30).add("memory", "c" * 10)  # the room is gone
    approver = ReviewTools.at_home(home, memory_limit=30)
    with pytest.raises(Exception, match="would hold"):
        approver.apply_pending(staged["pending_id"])
    assert [r["id"] for r in PendingStore(home).records()] == [staged["pending_id"]]
