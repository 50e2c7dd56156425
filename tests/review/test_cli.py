"""`warmstart review`, `warmstart memory ...` and `warmstart skills ...` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.review.helpers import DEPLOY_SKILL, MAIN_SYSTEM, MainTools, main_runtime
from tests.support.openai_double import OpenAIDouble, call, http_error, text, tool_calls
from typer.testing import CliRunner

import warmstart.cli.review  # noqa: F401  (registers the commands on the app)
from warmstart.cli.app import app
from warmstart.review import (
    MemoryFileError,
    MemoryStore,
    Provenance,
    ProvenanceLog,
    ReviewTools,
    SkillStore,
)
from warmstart.runtime import Decision, ToolRequest


def cli(
    *args: str, input: str | None = None, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), input=input, env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def recorded_session(double: OpenAIDouble, db_url: str) -> str:
    runtime = main_runtime(double, MainTools().registry(), record=True, db_url=db_url)
    double.enqueue(tool_calls(call("terminal", {"command": "make deploy"})), text("Deployed."))
    result = runtime.run("Deploy staging. I'm Ada.", system=MAIN_SYSTEM)
    return result.to_session().key


def test_review_command_reviews_a_stored_session(
    openai_double: OpenAIDouble, sqlite_url: str, home: Path
) -> None:
    key = recorded_session(openai_double, sqlite_url)
    openai_double.enqueue(
        tool_calls(call("memory", {"target": "user", "action": "add", "content": "Name: Ada."})),
        text("Saved."),
    )
    code, out, err = cli(
        "review", key, "--kind", "memory", "--endpoint", openai_double.base_url,
        "--model", "double-model", "--db", sqlite_url, "--home", str(home),
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert (
        out == "Self-improvement review: User profile updated\n  memory: Entry added in USER.md.\n"
    )
    assert MemoryStore.at_home(home).entries("user") == ["Name: Ada."]
    sent = openai_double.chat_requests[2]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert sent[2]["tool_calls"][0]["function"]["name"] == "terminal"
    [row] = ProvenanceLog.at_home(home).records()
    assert (row["session_id"], row["platform"], row["write_origin"]) == (
        key,
        "cli",
        "background_review",
    )


def test_review_command_reports_nothing_saved_and_endpoint_failures(
    openai_double: OpenAIDouble, sqlite_url: str, home: Path
) -> None:
    key = recorded_session(openai_double, sqlite_url)
    base = ["review", key, "--endpoint", openai_double.base_url, "--model", "double-model",
            "--db", sqlite_url, "--home", str(home)]  # fmt: skip
    openai_double.enqueue(text("Nothing to save."))
    assert cli(*base) == (0, "Self-improvement review: nothing saved.\n", "")
    openai_double.enqueue(http_error(500, "upstream down"))
    code, out, err = cli(*base, "--json")
    assert code == 1 and err == ""
    data = json.loads(out)
    assert data["ok"] is False and data["stop_reason"] == "endpoint_error"
    assert "upstream down" in data["errors"][0]


def test_memory_show_with_and_without_provenance(home: Path) -> None:
    tools = ReviewTools.at_home(home, provenance=Provenance("background_review", "s1", "p0", "cli"))
    tracked = tools.track(lambda request: Decision.allow())
    args = {"target": "memory", "action": "add", "content": "Staging is stg-01."}
    tracked(ToolRequest("memory", args, "call_9", "run", 1, "m", "t", unattended=True))
    tools.memory(args)
    (home / "memories" / "USER.md").write_text("Hand-written by the user.")
    code, out, _ = cli("memory", "show", "--home", str(home))
    assert code == 0 and out == (
        "MEMORY.md (memory): 18/2,200 chars, 1 entry\n"
        "  1. Staging is stg-01.\n"
        "USER.md (user): 25/1,375 chars, 1 entry\n"
        "  1. Hand-written by the user.\n"
    )
    code, out, _ = cli("memory", "show", "--provenance", "--home", str(home))
    lines = out.splitlines()
    assert lines[2].startswith(
        "     from: background_review · session s1 · parent p0 · platform cli · call call_9 · "
    )
    assert lines[5] == "     from: unknown (not written through warmstart)"
    data = json.loads(cli("memory", "show", "--provenance", "--json", "--home", str(home))[1])
    assert data["memory"]["entries"][0]["provenance"]["tool_call_id"] == "call_9"


def test_home_comes_from_hermes_home_when_no_flag(home: Path) -> None:
    MemoryStore.at_home(home).add("user", "From the Hermes home.")
    code, out, _ = cli("memory", "show", "--target", "user", env={"HERMES_HOME": str(home)})
    assert code == 0 and "From the Hermes home." in out


def test_memory_edit_from_a_file_and_from_the_editor(home: Path, tmp_path: Path) -> None:
    new = tmp_path / "new.md"
    new.write_text("Name: Ada.\n§\nPrefers short answers.\n")
    code, out, _ = cli(
        "memory", "edit", "--target", "user", "--from-file", str(new), "--home", str(home)
    )
    assert code == 0 and out == "Saved USER.md: 2 entries, 2% — 35/1,375 chars.\n"
    code, out, _ = cli(
        "memory", "edit", "--target", "user", "--home", str(home),
        env={"EDITOR": "sed -i s/Ada/Grace/"},
    )  # fmt: skip
    assert code == 0 and MemoryStore.at_home(home).entries("user") == [
        "Name: Grace.",
        "Prefers short answers.",
    ]
    origins = {r["write_origin"] for r in ProvenanceLog.at_home(home).records()}
    assert origins == {"user_cli"}
    too_long = tmp_path / "long.md"
    too_long.write_text("x" * 1_400)
    with pytest.raises(Exception, match="over its limit of 1,375"):
        cli("memory", "edit", "--target", "user", "--from-file", str(too_long), "--home", str(home))
    assert MemoryStore.at_home(home).entries("user") == ["Name: Grace.", "Prefers short answers."]


def test_memory_clear_asks_first(home: Path) -> None:
    MemoryStore.at_home(home).add("memory", "Keep me unless confirmed.")
    code, _, _ = cli("memory", "clear", "--home", str(home), input="n\n")
    assert code == 1 and MemoryStore.at_home(home).entries("memory") == [
        "Keep me unless confirmed."
    ]
    code, out, _ = cli("memory", "clear", "--target", "memory", "--yes", "--home", str(home))
    assert (code, out) == (0, "Cleared MEMORY.md.\n")
    assert (home / "memories" / "MEMORY.md").read_text() == ""


def test_pending_approve_and_reject(home: Path) -> None:
    staging = ReviewTools.at_home(home, provenance=Provenance("background_review", "s2"),
                                  write_approval=True)  # fmt: skip
    first = json.loads(staging.memory({"target": "user", "action": "add", "content": "Name: Ada."}))
    second = json.loads(staging.skill_manage({"action": "create", "name": "deploy-checklist",
                                              "content": DEPLOY_SKILL}))  # fmt: skip
    code, out, _ = cli("memory", "pending", "--home", str(home))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"{first['pending_id']}  memory  background_review  ")
    assert lines[0].endswith("user profile: Name: Ada.")
    assert lines[1].endswith("create skill 'deploy-checklist'")
    assert cli("memory", "approve", first["pending_id"], "--home", str(home)) == (
        0, f"Approved {first['pending_id']}: Entry added in USER.md.\n", "",
    )  # fmt: skip
    assert cli("memory", "reject", second["pending_id"], "--home", str(home))[1] == (
        f"Rejected {second['pending_id']}.\n"
    )
    assert MemoryStore.at_home(home).entries("user") == ["Name: Ada."]
    assert SkillStore.at_home(home).list_skills() == []
    assert cli("memory", "pending", "--home", str(home))[1] == "No pending writes.\n"


def test_skills_list_show_and_delete(home: Path) -> None:
    store = SkillStore.at_home(home)
    store.create("deploy-checklist", DEPLOY_SKILL, category="devops")
    store.write_file("deploy-checklist", "references/rollback.md", "Roll back.")
    (home / "skills" / "broken").mkdir()
    (home / "skills" / "broken" / "SKILL.md").write_text("no front matter\n")
    code, out, _ = cli("skills", "list", "--home", str(home))
    assert code == 0 and out.splitlines() == [
        "broken  broken: SKILL.md must start with YAML front matter: a '---' line, 'name: ...', "
        "'description: ...', then a closing '---' line",
        "devops/deploy-checklist  Deploy a service to staging safely.",
    ]
    assert cli("skills", "show", "deploy-checklist", "--home", str(home))[1] == DEPLOY_SKILL
    shown = cli("skills", "show", "deploy-checklist", "--file", "references/rollback.md",
                "--home", str(home))  # fmt: skip
    assert shown[1] == "Roll back.\n"
    code, _, _ = cli("skills", "delete", "deploy-checklist", "--home", str(home), input="n\n")
    assert code == 1 and store.find("deploy-checklist") is not None
    code, out, _ = cli("skills", "delete", "deploy-checklist", "--yes", "--home", str(home))
    assert (code, out) == (0, "Skill 'deploy-checklist' deleted.\n")
    assert not (home / "skills" / "devops").exists()
    rows = json.loads(cli("skills", "list", "--json", "--home", str(home))[1])
    assert [r["name"] for r in rows] == ["broken"]


def test_a_corrupt_memory_file_is_a_typed_error_for_the_cli(home: Path) -> None:
    """The CLI's entry point turns a WarmstartError into one red line and exit 1."""
    (home / "memories").mkdir()
    (home / "memories" / "MEMORY.md").write_bytes(b"\xff\xfe")
    with pytest.raises(MemoryFileError, match=r"^MEMORY.md is not valid UTF-8 text \(byte 0\)"):
        cli("memory", "show", "--home", str(home))
    assert (home / "memories" / "MEMORY.md").read_bytes() == b"\xff\xfe"
