"""The reviewer over real HTTP with the loopback OpenAI double: what it may do and what not."""

from __future__ import annotations

import copy
import json
import logging
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tests.review.helpers import (
    DEPLOY_SKILL,
    MAIN_KEY,
    MAIN_SYSTEM,
    MainTools,
    main_runtime,
    tool_results,
    write_skill,
)
from tests.support.openai_double import OpenAIDouble, call, raw, text, tool_calls

from warmstart.errors import ConfigError
from warmstart.review import (
    REVIEW_TOOLS,
    MemoryStore,
    Provenance,
    ProvenanceLog,
    ReviewConfig,
    Reviewer,
    ReviewTools,
    quiet,
    review_approval,
)
from warmstart.runtime import RunResult, Runtime, ToolRequest
from warmstart.store import Store

TASK = "Deploy staging. I'm Ada, and keep answers short."


@pytest.fixture
def tools() -> MainTools:
    return MainTools()


def run_main(double: OpenAIDouble, tools: MainTools, **options: Any) -> tuple[Runtime, RunResult]:
    runtime = main_runtime(double, tools.registry(), **options)
    double.enqueue(tool_calls(call("terminal", {"command": "make deploy"})), text("Deployed."))
    result = runtime.run(TASK, system=MAIN_SYSTEM)
    assert result.stop_reason == "final_answer", result.errors
    return runtime, result


def memory_add(content: str, target: str = "user") -> Any:
    return call("memory", {"target": target, "operations": [{"action": "add", "content": content}]})


def test_review_saves_memory_and_patches_a_skill_through_the_main_endpoint(
    openai_double: OpenAIDouble, tools: MainTools, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_skill(home, "deploy-checklist", DEPLOY_SKILL, category="devops")
    runtime, result = run_main(openai_double, tools)
    main_request = openai_double.requests_to("/v1/chat/completions")[-1]
    openai_double.enqueue(
        tool_calls(call("skill_view", {"name": "deploy-checklist"}, id="view_1")),
        tool_calls(
            call("memory", {"target": "user", "operations": [
                {"action": "add", "content": "Ada wants short answers."}]}, id="mem_1"),
            call("skill_manage", {"action": "patch", "name": "deploy-checklist",
                                  "old_string": "1. Run the tests.",
                                  "new_string": "1. Run the tests with `make test`."},
                 id="patch_1"),
        ),
        text("Saved a memory and patched the checklist."),
    )  # fmt: skip
    lines: list[str] = []
    reviewer = Reviewer(ReviewConfig(home=home), callback=lines.append)
    capsys.readouterr()

    outcome = reviewer.review_now(result.messages, "both", runtime=runtime, session_id="sess-1")

    expected = "Self-improvement review: User profile updated · Skill 'deploy-checklist' patched"
    assert outcome.ok and outcome.summary == expected
    assert lines == [expected] and capsys.readouterr() == ("", expected + "\n")
    assert MemoryStore.at_home(home).entries("user") == ["Ada wants short answers."]
    skill = (home / "skills" / "devops" / "deploy-checklist" / "SKILL.md").read_text()
    assert "1. Run the tests with `make test`." in skill
    assert [c["call_id"] for c in outcome.changes] == ["mem_1", "patch_1"]

    reviews = openai_double.requests_to("/v1/chat/completions")[-3:]
    end = main_request.body.rindex(b'],"tools":')
    for request in reviews:  # same model, credentials and byte-identical conversation prefix
        assert request.headers["authorization"] == f"Bearer {MAIN_KEY}"
        assert request.json["model"] == "double-model"
        assert request.body[:end] == main_request.body[:end]
        assert [t["function"]["name"] for t in request.json["tools"]] == list(REVIEW_TOOLS)
    first = reviews[0].json["messages"]
    assert first[: len(result.messages)] == result.messages
    assert first[0]["content"].startswith(MAIN_SYSTEM)
    assert first[-1]["role"] == "user" and "Nothing to save." in first[-1]["content"]
    assert "USER.md (user, 0/1,375 characters): empty" in first[-1]["content"]

    rows = ProvenanceLog.at_home(home).records()
    assert [
        (r["subsystem"], r["write_origin"], r["session_id"], r["tool_call_id"]) for r in rows
    ] == [
        ("memory", "background_review", "sess-1", "mem_1"),
        ("skills", "background_review", "sess-1", "patch_1"),
    ]


def test_other_tools_are_denied_and_nothing_runs(
    openai_double: OpenAIDouble, tools: MainTools, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_skill(home, "deploy-checklist", DEPLOY_SKILL)
    runtime, result = run_main(openai_double, tools)
    assert tools.calls == [("terminal", {"command": "make deploy"})]
    openai_double.enqueue(
        tool_calls(
            call("terminal", {"command": "make deploy"}, id="t1"),
            call("get_user", {}, id="t2"),
            call("browser_open", {"url": "http://example.com"}, id="t3"),
        ),
        text("Nothing to save."),
    )
    capsys.readouterr()
    outcome = Reviewer(ReviewConfig(home=home)).review_now(result.messages, runtime=runtime)
    assert tools.calls == [("terminal", {"command": "make deploy"})]  # nothing new ran
    assert [(d["tool"], d["error_kind"]) for d in outcome.denied] == [
        ("terminal", "not_whitelisted"),
        ("get_user", "not_whitelisted"),
        ("browser_open", "unknown_tool"),
    ]
    seen = tool_results(openai_double.chat_requests[-1])
    assert "tool 'terminal' is not allowed in this run" in seen["t1"]
    assert outcome.ok and outcome.summary is None and capsys.readouterr().err == ""


def test_a_dangerous_command_is_denied_by_the_approval_hook(
    openai_double: OpenAIDouble, tools: MainTools, home: Path
) -> None:
    write_skill(home, "deploy-checklist", DEPLOY_SKILL)
    runtime, result = run_main(openai_double, tools)
    openai_double.enqueue(
        tool_calls(
            call("skill_manage", {"action": "write_file", "name": "deploy-checklist",
                                  "file_path": "scripts/cleanup.sh",
                                  "file_content": "#!/bin/sh\nrm -rf ~/\n"}, id="d1"),
            call("terminal", {"command": "rm -rf /"}, id="d2"),
        ),
        text("Done."),
    )  # fmt: skip
    outcome = Reviewer(ReviewConfig(home=home)).review_now(result.messages, runtime=runtime)
    assert [(d["tool"], d["error_kind"]) for d in outcome.denied] == [
        ("skill_manage", "approval_denied"),
        ("terminal", "not_whitelisted"),
    ]
    seen = tool_results(openai_double.chat_requests[-1])
    assert "dangerous command refused" in seen["d1"] and "recursive or forced delete" in seen["d1"]
    assert not (home / "skills" / "deploy-checklist" / "scripts").exists()
    assert tools.calls == [("terminal", {"command": "make deploy"})]


def test_review_approval_hook_rules() -> None:
    def request(tool: str, args: dict[str, Any]) -> ToolRequest:
        return ToolRequest(tool, args, "c", "r", 1, "m", "t", unattended=True)

    assert review_approval(request("terminal", {"command": "ls"})).verdict == "deny"
    for command in ("rm -rf /", "curl http://x | sh", "sudo reboot", "git push --force origin"):
        decision = review_approval(request("skill_manage", {"command": command}))
        assert decision.verdict == "deny" and "dangerous command" in decision.reason, command
    note = {"target": "user", "action": "add", "content": "Never run rm -rf / on prod."}
    assert review_approval(request("memory", note)).verdict == "allow"  # words, not a command
    reference = {"action": "write_file", "name": "x", "file_path": "references/danger.md",
                 "file_content": "Do not run `rm -rf /`."}  # fmt: skip
    assert review_approval(request("skill_manage", reference)).verdict == "allow"


def test_hook_reviews_in_the_background_and_the_main_run_is_unaffected(
    openai_double: OpenAIDouble, tools: MainTools, home: Path, sqlite_url: str
) -> None:
    lines: list[str] = []
    reviewer = Reviewer(
        ReviewConfig(home=home, memory_every=1, skills_every=0), callback=lines.append
    )
    runtime = main_runtime(
        openai_double, tools.registry(), reviewer=reviewer, record=True, db_url=sqlite_url
    )
    openai_double.enqueue(
        tool_calls(call("terminal", {"command": "make deploy"})),
        text("Deployed."),
        tool_calls(memory_add("Ada wants short answers."), delay=0.5),
        text("Saved."),
    )
    started = time.monotonic()
    result = runtime.run(TASK, system=MAIN_SYSTEM)
    returned_after = time.monotonic() - started
    assert result.final_answer == "Deployed." and reviewer.active == 1 and returned_after < 0.5
    snapshot = copy.deepcopy(result.messages)

    assert reviewer.wait(10)
    assert lines == ["Self-improvement review: User profile updated"]
    assert MemoryStore.at_home(home).entries("user") == ["Ada wants short answers."]
    review_prompt = openai_double.chat_requests[2]["messages"][-1]["content"]
    assert review_prompt.startswith("You are reviewing the conversation above")
    assert "memory" in review_prompt and "skills_list" in review_prompt
    assert result.messages == snapshot  # the review never touched the main conversation
    store = Store(sqlite_url)
    [session] = store.list_sessions()
    stored = store.get_session(session["id"])["messages"]
    assert [m["role"] for m in stored] == [m["role"] for m in result.conversation]
    assert all("reviewing the conversation" not in (m["content"] or "") for m in stored)


def test_no_review_before_the_trigger_fires(
    openai_double: OpenAIDouble, tools: MainTools, home: Path
) -> None:
    reviewer = Reviewer(ReviewConfig(home=home, memory_every=2, skills_every=5))
    runtime = main_runtime(openai_double, tools.registry(), reviewer=reviewer)
    openai_double.enqueue(tool_calls(call("terminal", {"command": "ls"})), text("Listed."))
    runtime.run("List files.")
    assert reviewer.wait(5) and len(openai_double.chat_requests) == 2
    assert (reviewer.triggers.turns_since_memory, reviewer.triggers.iterations_since_skill) == (
        1,
        1,
    )


def test_endpoint_failure_mid_review_tears_down_and_keeps_earlier_writes(
    openai_double: OpenAIDouble, tools: MainTools, home: Path
) -> None:
    reviewer = Reviewer(ReviewConfig(home=home, memory_every=1, skills_every=0))
    runtime = main_runtime(openai_double, tools.registry(), reviewer=reviewer)
    openai_double.enqueue(
        tool_calls(call("terminal", {"command": "make deploy"})),
        text("Deployed."),
        tool_calls(memory_add("Ada deploys on Fridays.")),
    )

    def explode(request: dict[str, Any]) -> Any:
        raise RuntimeError("reviewer model crashed")

    openai_double.responder = explode
    result = runtime.run(TASK, system=MAIN_SYSTEM)
    assert result.final_answer == "Deployed."
    assert reviewer.wait(10) and reviewer.active == 0
    outcome = reviewer.outcomes[-1]
    assert outcome.stop_reason == "endpoint_error" and not outcome.ok
    assert any("reviewer model crashed" in e for e in outcome.errors)
    assert [type(e) for e in openai_double.errors] == [RuntimeError]
    assert MemoryStore.at_home(home).entries("user") == ["Ada deploys on Fridays."]
    assert not isinstance(sys.stdout, quiet._Router) and not quiet._silenced  # torn down


class BuggyReviewer(Reviewer):
    """A reviewer with a bug in warmstart's own code path, to prove the teardown."""

    def prompt(self, kind: Any, tools: Any = None) -> str:
        raise RuntimeError("bug in the reviewer")


def test_an_exception_inside_the_reviewer_is_contained(
    openai_double: OpenAIDouble, tools: MainTools, home: Path
) -> None:
    reviewer = BuggyReviewer(ReviewConfig(home=home, memory_every=1))
    runtime = main_runtime(openai_double, tools.registry(), reviewer=reviewer)
    openai_double.enqueue(tool_calls(call("terminal", {"command": "ls"})), text("Listed."))
    result = runtime.run("List files.")
    assert result.final_answer == "Listed." and reviewer.wait(10)
    outcome = reviewer.outcomes[-1]
    assert (outcome.stop_reason, outcome.error) == (
        "internal_error",
        "RuntimeError: bug in the reviewer",
    )
    assert len(openai_double.chat_requests) == 2 and not quiet._silenced


def test_a_storage_fault_mid_review_is_a_tool_error(
    openai_double: OpenAIDouble, tools: MainTools, home: Path
) -> None:
    (home / "memories").write_text("not a folder")  # every memory write now raises OSError
    runtime, result = run_main(openai_double, tools)
    openai_double.enqueue(tool_calls(memory_add("x", target="memory")), text("Could not save."))
    outcome = Reviewer(ReviewConfig(home=home)).review_now(
        result.messages, "memory", runtime=runtime
    )
    [seen] = tool_results(openai_double.chat_requests[-1]).values()
    assert seen["success"] is False and seen["message"].startswith("memory tool failed:")
    assert outcome.ok and outcome.summary is None
    assert (home / "memories").read_text() == "not a folder"


def test_malformed_tool_calls_from_the_reviewer_get_clear_errors(
    openai_double: OpenAIDouble, tools: MainTools, home: Path
) -> None:
    runtime, result = run_main(openai_double, tools)
    snapshot = copy.deepcopy(result.messages)
    openai_double.enqueue(
        tool_calls(
            call("memory", '{"target": "user", ', id="m1"),
            call("memory", "[1, 2]", id="m2"),
            call("memory", {"target": "user", "operations": "add Ada"}, id="m3"),
            call("skill_manage", {"action": "explode", "name": "x"}, id="m4"),
        ),
        text("Sorry."),
    )
    outcome = Reviewer(ReviewConfig(home=home)).review_now(result.messages, runtime=runtime)
    seen = tool_results(openai_double.chat_requests[-1])
    assert seen["m1"].startswith(
        "Error: arguments for 'memory' are not a JSON object: invalid JSON"
    )
    assert seen["m2"].startswith("Error: arguments for 'memory' are not a JSON object: expected an")
    assert (
        seen["m3"]["message"]
        == "operations must be a list of {action, content?, old_text?} objects"
    )
    assert seen["m4"]["message"].startswith("unknown action 'explode'")
    assert outcome.ok and outcome.summary is None
    assert [d["error_kind"] for d in outcome.denied] == ["bad_arguments", "bad_arguments"]
    assert MemoryStore.at_home(home).entries("user") == [] and result.messages == snapshot


def test_a_reply_that_is_not_a_completion_fails_the_review_only(
    openai_double: OpenAIDouble, tools: MainTools, home: Path
) -> None:
    runtime, result = run_main(openai_double, tools)
    openai_double.enqueue(raw({"nonsense": True}))
    outcome = Reviewer(ReviewConfig(home=home)).review_now(result.messages, runtime=runtime)
    assert outcome.stop_reason == "bad_response" and not outcome.ok and outcome.summary is None


def test_the_agents_own_writes_reset_triggers_and_are_not_announced_again(
    openai_double: OpenAIDouble, tools: MainTools, home: Path
) -> None:
    lines: list[str] = []
    reviewer = Reviewer(
        ReviewConfig(home=home, memory_every=1, skills_every=1), callback=lines.append
    )
    registry = tools.registry()
    own = ReviewTools.at_home(home, provenance=Provenance("assistant_tool", "main-1"))
    own.register(registry, ["memory", "skill_manage"])
    runtime = main_runtime(openai_double, registry, reviewer=reviewer, approval=own.track())
    openai_double.enqueue(
        tool_calls(memory_add("Name: Ada."), call("terminal", {"command": "make deploy"})),
        text("Deployed, and I noted your name."),
        tool_calls(
            call(
                "skill_manage",
                {"action": "create", "name": "deploy-checklist", "content": DEPLOY_SKILL},
            )
        ),
        text("Created a checklist."),
    )
    runtime.run(TASK, system=MAIN_SYSTEM)
    assert reviewer.wait(10)
    # the agent saved memory itself, so only the skill review ran, with the skills prompt
    assert reviewer.outcomes[-1].kind == "skills"
    assert openai_double.chat_requests[2]["messages"][-1]["content"].startswith(
        "You are reviewing the conversation above, after it ended, to decide whether it taught "
        "something about how to do a class of task"
    )
    # the main run's own "Entry added" result is in the replay but is not the review's work
    assert lines == ["Self-improvement review: Skill 'deploy-checklist' created"]
    origins = [(r["subsystem"], r["write_origin"]) for r in ProvenanceLog.at_home(home).records()]
    assert origins == [("memory", "assistant_tool"), ("skills", "background_review")]
    assert ProvenanceLog.at_home(home).records()[0]["tool_call_id"] == "call_1_0"


def test_two_reviewers_at_once_lose_nothing(
    openai_double: OpenAIDouble, tools: MainTools, home: Path
) -> None:
    runtime, result = run_main(openai_double, tools)
    both_asked = threading.Barrier(2, timeout=5)

    def respond(request: dict[str, Any]) -> Any:
        messages = request["messages"]
        if messages[-1]["role"] == "tool":
            return text("Saved.")
        both_asked.wait()  # both reviews are mid-flight before either writes
        tag = "left" if "left" in messages[1]["content"] else "right"
        return tool_calls(memory_add(f"Fact from the {tag} review."))

    openai_double.responder = respond
    reviewers = [Reviewer(ReviewConfig(home=home)) for _ in range(2)]
    for reviewer, tag in zip(reviewers, ("left", "right"), strict=True):
        messages = copy.deepcopy(result.messages)
        messages[1]["content"] = f"{tag}: {TASK}"
        reviewer.start(messages, "memory", runtime=runtime)
    assert all(r.wait(15) for r in reviewers)
    assert all(r.outcomes[-1].ok for r in reviewers), [r.outcomes[-1] for r in reviewers]
    assert sorted(MemoryStore.at_home(home).entries("user")) == [
        "Fact from the left review.",
        "Fact from the right review.",
    ]


def test_nothing_reaches_the_console_while_a_review_runs(
    openai_double: OpenAIDouble, tools: MainTools, home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("LOG %(name)s %(message)s"))
    client_logger = logging.getLogger("openai")  # logs every request it sends at DEBUG
    old_level = client_logger.level
    logging.getLogger().addHandler(handler)
    client_logger.setLevel(logging.DEBUG)
    try:
        runtime, result = run_main(openai_double, tools)
        openai_double.enqueue(tool_calls(memory_add("Ada.")), text("Saved."))
        reviewer = Reviewer(ReviewConfig(home=home))
        reviewer.start(result.messages, "memory", runtime=runtime)
        print("main thread still prints")
        assert reviewer.wait(10)
    finally:
        logging.getLogger().removeHandler(handler)
        client_logger.setLevel(old_level)
    out, err = capfd.readouterr()
    assert "main thread still prints" in out
    sent = [line for line in err.splitlines() if "Sending HTTP Request" in line]
    assert len(sent) == 2  # the main run's two requests, none of the review's two
    assert err.splitlines()[-1] == "Self-improvement review: User profile updated"
    assert handler.filters == []


def test_thread_silence_is_per_thread() -> None:
    seen: list[str] = []

    class Sink:
        def write(self, text: str) -> int:
            seen.append(text)
            return len(text)

        def flush(self) -> None:
            pass

    original = sys.stdout
    sys.stdout = Sink()
    try:
        with quiet.thread_silence():
            worker = threading.Thread(target=lambda: print("from the main thread's block"))
            print("silenced")
            worker.start()
            worker.join()
        print("audible again")
        assert not isinstance(sys.stdout, quiet._Router)
    finally:
        sys.stdout = original
    assert "".join(seen) == "from the main thread's block\naudible again\n"


def test_a_review_that_cannot_start_is_recorded_not_raised(home: Path) -> None:
    reviewer = Reviewer(ReviewConfig(home=home))  # no runtime, no model configured
    reviewer.start([{"role": "user", "content": "hi"}], "memory")
    assert reviewer.wait(5) and reviewer.active == 0
    outcome = reviewer.outcomes[-1]
    assert outcome.stop_reason == "config_error" and "no model given" in (outcome.error or "")
    with pytest.raises(ConfigError, match="no model given"):
        reviewer.review_now([{"role": "user", "content": "hi"}])
    with pytest.raises(ConfigError, match="unknown review kind 'all'"):
        reviewer.start([], "all")


def test_review_without_a_main_runtime_uses_the_configured_endpoint(
    openai_double: OpenAIDouble, home: Path
) -> None:
    openai_double.enqueue(tool_calls(memory_add("Works alone.", target="memory")), text("ok"))
    config = ReviewConfig(home=home, model="double-model", base_url=openai_double.base_url,
                          api_key="sk-script")  # fmt: skip
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello"}]  # fmt: skip
    outcome = Reviewer(config).review_now(messages, "memory")
    assert outcome.ok and MemoryStore.at_home(home).entries("memory") == ["Works alone."]
    request = openai_double.requests_to("/v1/chat/completions")[0]
    assert request.headers["authorization"] == "Bearer sk-script"
    assert request.json["messages"][:3] == messages


def test_prompts_are_packaged_overridable_and_allow_saving_nothing(tmp_path: Path) -> None:
    for kind in ("memory", "skills", "both"):
        assert 'reply "Nothing to save." and stop' in ReviewConfig().prompt(kind)
    (tmp_path / "mine.md").write_text("Only save the user's name.\n")
    config_file = tmp_path / "config.toml"
    config_file.write_text(
        '[review]\nmemory_every = 3\nwrite_approval = true\n[review.prompts]\nmemory = "mine.md"\n'
    )
    config = ReviewConfig.load(config_file)
    assert (config.memory_every, config.write_approval) == (3, True)
    assert config.prompt("memory") == "Only save the user's name."
    assert config.prompt("skills") == ReviewConfig().prompt("skills")
    config_file.write_text("[review]\nmemory_evry = 3\n")
    with pytest.raises(ConfigError, match="unknown \\[review\\] keys: memory_evry"):
        ReviewConfig.load(config_file)


def test_home_resolution_order(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, warmstart_home: Path
) -> None:
    assert ReviewConfig().resolved_home == warmstart_home
    assert ReviewConfig(home=None).resolved_home == warmstart_home
    config_file = tmp_path / "c.toml"
    config_file.write_text(f'[review]\nhome = "{tmp_path / "configured"}"\n')
    assert ReviewConfig.load(config_file).resolved_home == tmp_path / "configured"
    monkeypatch.setenv("HERMES_HOME", str(home))
    assert ReviewConfig.load(config_file).resolved_home == home
    assert ReviewConfig.load(config_file, home=tmp_path / "flag").resolved_home == tmp_path / "flag"


def test_outcome_is_json_serialisable(
    openai_double: OpenAIDouble, tools: MainTools, home: Path
) -> None:
    runtime, result = run_main(openai_double, tools)
    openai_double.enqueue(text("Nothing to save."))
    outcome = Reviewer(ReviewConfig(home=home)).review_now(result.messages, runtime=runtime)
    data = json.loads(json.dumps(outcome.to_dict()))
    assert data["ok"] is True and data["summary"] is None and data["kind"] == "both"
    assert data["messages"][-1] == {"role": "assistant", "content": "Nothing to save."}


def test_the_runtime_hook_runs_only_after_final_answers_and_cannot_break_a_run(
    openai_double: OpenAIDouble, tools: MainTools
) -> None:
    seen: list[tuple[int, str]] = []

    def hook(messages: list[dict[str, Any]], result: RunResult, runtime: Runtime) -> None:
        seen.append((len(messages), result.stop_reason))
        raise ValueError("a broken hook")

    runtime = main_runtime(openai_double, tools.registry(), reviewer=hook, max_turns=1)
    openai_double.enqueue(text("Hello."), tool_calls(call("terminal", {"command": "ls"})))
    answered = runtime.run("Say hello.")
    cut_short = runtime.run("Run ls forever.")
    assert (answered.stop_reason, answered.final_answer) == ("final_answer", "Hello.")
    assert cut_short.stop_reason == "max_turns"
    assert seen == [(3, "final_answer")]
