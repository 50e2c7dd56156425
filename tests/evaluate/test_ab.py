"""The A/B harness over real HTTP: it must measure exactly what the scripted model does,
record every run, resume without repeating work, and turn every failure into data."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.evaluate.scripted import has_warm_history, scripted_model, steps_taken
from tests.support.openai_double import OpenAIDouble, call, http_error, text, tool_calls

from warmstart.evaluate import (
    ABConfig,
    EvalStore,
    EvaluationError,
    Task,
    register_environment,
    run_experiment,
)
from warmstart.evaluate.ab import ARMS, load_experiment, schedule, unit_seed
from warmstart.evaluate.environments import Environment, Episode, unregister_environment
from warmstart.inject import ADDENDUM
from warmstart.runtime import ToolRegistry
from warmstart.store import Store


def config(tasks: Path, endpoint: str, **extra: Any) -> ABConfig:
    return ABConfig(
        model="double-model",
        endpoint=endpoint,
        tasks=str(tasks),
        template="ws",
        context_length=128_000,
        **extra,
    )


def metric(summary: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in summary["metrics"] if m["metric"] == name)


def test_scripted_model_gives_exact_per_arm_numbers(
    openai_double: OpenAIDouble, tasks_file: Path, template_db: str
) -> None:
    episodes: list[tuple[str, bool]] = []
    openai_double.responder = scripted_model(episodes)
    exp = run_experiment(config(tasks_file, openai_double.base_url, trials=2), db=template_db)

    assert exp.status == "complete" and len(exp.runs) == 8
    assert {(r["task_id"], r["trial"], r["arm"]) for r in exp.runs} == {
        (t, k, a) for t in ("upper-a", "upper-b") for k in (0, 1) for a in ARMS
    }
    # the warm arm really got the template (and only it did)
    assert sorted(w for _, w in episodes) == [False] * 4 + [True] * 4
    first_requests = [r for r in openai_double.chat_requests if steps_taken(r["messages"]) == 0]
    for request in first_requests:
        warm = has_warm_history(request["messages"])
        assert any(m.get("content") == ADDENDUM for m in request["messages"]) is warm
        assert request["seed"] in {
            unit_seed(0, t, k) for t in ("upper-a", "upper-b") for k in (0, 1)
        }

    for run in exp.runs:
        cold = run["arm"] == "cold"
        assert run["status"] == "measured" and run["stop_reason"] == "final_answer"
        assert (run["calls"], run["total_errors"]) == ((3, 1) if cold else (2, 0))
        assert run["first_success_turn"] == (2 if cold else 1)
        assert run["distinct_tools"] == 2 and run["success"] is True
        assert run["error_kinds"] == ({"exception": 1} if cold else {})

    rate = metric(exp.summary, "error_rate_30")
    assert rate["cold"]["estimate"] == pytest.approx(1 / 3, abs=1e-12)
    assert rate["warm"]["estimate"] == 0.0
    assert rate["paired"]["n"] == 4
    assert rate["paired"]["difference"]["estimate"] == pytest.approx(-1 / 3, abs=1e-12)
    assert rate["paired"]["p_value"] == pytest.approx(2 / 16)  # exact: all 4 pairs agree
    assert metric(exp.summary, "total_errors")["cold"]["estimate"] == 1.0
    assert metric(exp.summary, "total_errors")["warm"]["estimate"] == 0.0
    assert metric(exp.summary, "turns_to_first_success")["cold"]["estimate"] == 2.0
    assert metric(exp.summary, "turns_to_first_success")["warm"]["estimate"] == 1.0
    assert metric(exp.summary, "success")["cold"]["estimate"] == 1.0
    tokens = metric(exp.summary, "tokens")
    assert tokens["warm"]["estimate"] > tokens["cold"]["estimate"] > 0


def test_every_run_is_recorded_as_an_eval_session(
    openai_double: OpenAIDouble, tasks_file: Path, template_db: str
) -> None:
    openai_double.responder = scripted_model()
    exp = run_experiment(config(tasks_file, openai_double.base_url), db=template_db)
    ids = [sid for r in exp.runs for sid in r["session_ids"]]
    assert len(ids) == 4 == EvalStore(template_db).session_count(ids)
    stored = Store(template_db).list_sessions()
    assert {s["source"] for s in stored} == {"warmstart-eval"}
    by_arm = {s["metadata"]["arm"]: s for s in stored}
    assert by_arm["cold"]["n_failures"] == 1 and by_arm["warm"]["n_failures"] == 0
    assert {s["metadata"]["experiment"] for s in stored} == {exp.id}


def test_cost_comes_from_prices(
    openai_double: OpenAIDouble, tasks_file: Path, template_db: str
) -> None:
    openai_double.responder = scripted_model()
    exp = run_experiment(
        config(tasks_file, openai_double.base_url, price_in=2.0, price_out=10.0),
        db=template_db,
    )
    cold = [r for r in exp.runs if r["arm"] == "cold"]
    want = sum(r["prompt_tokens"] * 2.0 + r["completion_tokens"] * 10.0 for r in cold) / 1e6
    assert metric(exp.summary, "cost")["cold"]["estimate"] == pytest.approx(want / len(cold))


def test_schedule_interleaves_arms_and_randomises_order() -> None:
    plan = schedule([f"t{i}" for i in range(6)], trials=3, seed=7)
    assert plan == schedule([f"t{i}" for i in range(6)], trials=3, seed=7)
    assert len(plan) == 36 and len(set(plan)) == 36
    pairs = [plan[i : i + 2] for i in range(0, 36, 2)]
    assert all(a[:2] == b[:2] and {a[2], b[2]} == set(ARMS) for a, b in pairs)
    firsts = [a[2] for a, _ in pairs]
    assert 0 < firsts.count("cold") < 18  # neither arm always goes first
    units = [a[:2] for a, _ in pairs]
    assert units != sorted(units)  # not in task order
    assert schedule([f"t{i}" for i in range(6)], trials=3, seed=8) != plan


def test_resume_skips_finished_runs(
    openai_double: OpenAIDouble, tasks_file: Path, template_db: str
) -> None:
    episodes: list[tuple[str, bool]] = []
    openai_double.responder = scripted_model(episodes)
    first = run_experiment(
        config(tasks_file, openai_double.base_url, trials=2), db=template_db, max_runs=3
    )
    assert first.status == "running" and len(first.runs) == 3 and len(episodes) == 3
    assert first.summary["done"] == 3 and first.summary["planned"] == 8
    done_before = {(r["task_id"], r["trial"], r["arm"]) for r in first.runs}

    with pytest.raises(EvaluationError, match="trials"):
        run_experiment(
            config(tasks_file, openai_double.base_url, trials=3), db=template_db, resume=first.id
        )

    resumed = run_experiment(db=template_db, resume=first.id[:10], api_key="k")
    assert resumed.id == first.id and resumed.status == "complete" and resumed.ran_now == 5
    assert len(episodes) == 8  # 3 + 5: nothing ran twice
    units = [(r["task_id"], r["trial"], r["arm"]) for r in resumed.runs]
    assert len(units) == len(set(units)) == 8 and done_before <= set(units)
    again = run_experiment(db=template_db, resume=first.id)
    assert again.ran_now == 0 and len(episodes) == 8
    rate = metric(load_experiment(first.id, template_db).summary, "error_rate_30")
    assert rate["cold"]["estimate"] == pytest.approx(1 / 3, abs=1e-12)


def test_dead_endpoint_is_data_and_retry_errors_reruns(
    closed_base_url: str, openai_double: OpenAIDouble, tasks_file: Path, template_db: str
) -> None:
    down = run_experiment(config(tasks_file, closed_base_url), db=template_db)
    assert down.status == "complete" and len(down.runs) == 4
    assert {r["status"] for r in down.runs} == {"excluded"}
    assert {r["stop_reason"] for r in down.runs} == {"endpoint_error"}
    assert down.runs[0]["run_errors"][0]["kind"] == "connection"
    assert down.summary["arms"]["cold"]["excluded_by"] == {"endpoint_error": 2}
    assert metric(down.summary, "error_rate_30")["cold"]["estimate"] is None

    openai_double.responder = scripted_model()
    moved = config(tasks_file, openai_double.base_url)  # same design, endpoint moved
    fixed = run_experiment(moved, db=template_db, resume=down.id, retry_errors=True)
    assert {r["status"] for r in fixed.runs} == {"measured"} and fixed.ran_now == 4
    assert metric(fixed.summary, "total_errors")["cold"]["estimate"] == 1.0


def test_http_errors_are_excluded_not_fatal(
    openai_double: OpenAIDouble, tasks_file: Path, template_db: str
) -> None:
    openai_double.enqueue(http_error(429, "slow down"), http_error(500, "upstream broke"))
    openai_double.responder = scripted_model()
    exp = run_experiment(config(tasks_file, openai_double.base_url), db=template_db)
    excluded = [r for r in exp.runs if r["status"] == "excluded"]
    assert len(excluded) == 2 and len(exp.runs) == 4
    statuses = sorted(e["status"] for r in excluded for e in r["run_errors"])
    assert statuses == [429, 500]
    assert sum(exp.summary["arms"][a]["measured"] for a in ARMS) == 2


def test_bad_model_output_and_tool_failures_are_measured(
    openai_double: OpenAIDouble, tasks_file: Path, template_db: str
) -> None:
    def respond(request: dict[str, Any]) -> Any:
        script = [
            tool_calls(call("write_file", '{"path": "out.txt", "content": ')),  # broken JSON
            tool_calls(call("delete_everything", {})),  # no such tool
            tool_calls(call("read_file", {"path": "missing.txt"})),  # tool raises
            tool_calls(call("execute_code", {"code": "import sys; sys.exit(3)"})),  # exit 3
            tool_calls(call("read_file", {"path": "/etc/passwd"})),  # sandbox refuses
            tool_calls(call("read_file", {"path": "notes.txt"})),
        ]
        step = steps_taken(request["messages"])
        return script[step] if step < len(script) else text("gave up")

    openai_double.responder = respond
    exp = run_experiment(config(tasks_file, openai_double.base_url), db=template_db)
    for run in exp.runs:
        assert run["status"] == "measured"
        assert (run["calls"], run["total_errors"], run["errors_30"]) == (6, 5, 5)
        assert run["error_kinds"] == {
            "bad_arguments": 1,
            "unknown_tool": 1,
            "exception": 2,
            "exit-code": 1,
        }
        assert run["first_success_turn"] == 6 and run["success"] is False
    assert metric(exp.summary, "error_rate_30")["warm"]["estimate"] == pytest.approx(5 / 6)


class _Hangs(Environment):
    """A one-tool environment whose tool never returns in time."""

    name = "hangs"

    def __init__(self) -> None:
        self.tasks = [Task("wait", ["Call the slow tool."])]
        self.release = threading.Event()

    def episode(self, task: Task) -> Episode:
        env = self

        class _Ep(Episode):
            def __init__(self) -> None:
                self.tools = ToolRegistry()
                self.tools.register("slow", lambda args: env.release.wait(5), timeout=0.2)

        return _Ep()


def test_hung_tool_is_a_timeout_error(openai_double: OpenAIDouble, template_db: str) -> None:
    env = _Hangs()
    register_environment("hangs", lambda tasks: env)
    try:
        openai_double.responder = lambda r: (
            tool_calls(call("slow", {})) if steps_taken(r["messages"]) == 0 else text("ok")
        )
        exp = run_experiment(
            ABConfig(
                model="m",
                endpoint=openai_double.base_url,
                tasks="-",
                environment="hangs",
                template="ws",
                context_length=128_000,
            ),
            db=template_db,
        )
    finally:
        env.release.set()
        unregister_environment("hangs")
    assert [r["error_kinds"] for r in exp.runs] == [{"timeout": 1}, {"timeout": 1}]
    assert all(r["success"] is None for r in exp.runs)  # this environment cannot tell


def test_broken_environment_is_excluded(openai_double: OpenAIDouble, template_db: str) -> None:
    class Broken(_Hangs):
        def episode(self, task: Task) -> Episode:
            raise OSError("disk full")

    register_environment("broken", lambda tasks: Broken())
    try:
        exp = run_experiment(
            ABConfig(
                model="m",
                endpoint=openai_double.base_url,
                tasks="-",
                environment="broken",
                template="ws",
                context_length=128_000,
            ),
            db=template_db,
        )
    finally:
        unregister_environment("broken")
    assert [r["stop_reason"] for r in exp.runs] == ["environment_error"] * 2
    assert "disk full" in exp.runs[0]["detail"]
    assert openai_double.chat_requests == []


def test_unknown_template_and_environment_fail_before_any_run(
    openai_double: OpenAIDouble, tasks_file: Path, template_db: str
) -> None:
    from warmstart.errors import TemplateError
    from warmstart.evaluate import EnvironmentUnavailable

    with pytest.raises(TemplateError, match="no template 'ghost'"):
        run_experiment(
            ABConfig(
                model="m", endpoint=openai_double.base_url, tasks=str(tasks_file), template="ghost"
            ),
            db=template_db,
        )
    with pytest.raises(EnvironmentUnavailable, match="unknown environment 'nope'"):
        run_experiment(
            ABConfig(
                model="m",
                endpoint=openai_double.base_url,
                tasks=str(tasks_file),
                template="ws",
                environment="nope",
            ),
            db=template_db,
        )
    assert openai_double.chat_requests == []
    assert EvalStore(template_db).list_experiments() == []
    assert json.loads(json.dumps(EvalStore(template_db).list_experiments())) == []
