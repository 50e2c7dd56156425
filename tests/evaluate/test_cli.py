"""`warmstart eval offline|ab|show|list` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.evaluate.scripted import scripted_model
from tests.support.openai_double import OpenAIDouble
from typer.testing import CliRunner

import warmstart.cli.eval  # noqa: F401  (registers the `eval` group on the app)
from warmstart.cli import app

runner = CliRunner()


def invoke(*args: str) -> str:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("tau_db_url", ["sqlite"], indirect=True)
def test_offline_then_show_and_list(tau_db_url: str) -> None:
    out = json.loads(
        invoke(
            "eval",
            "offline",
            "--db",
            tau_db_url,
            "--budgets",
            "2000",
            "--strategies",
            "naive,warmstart",
            "--resamples",
            "100",
            "--json",
        )
    )
    ident = out["experiment_id"]
    assert out["split"]["test_tasks"] == 13
    assert {(s["strategy"], s["metric"]) for s in out["scores"]} >= {
        ("naive", "tool_recall"),
        ("warmstart", "error_coverage"),
    }
    markdown = invoke("eval", "show", ident, "--db", tau_db_url, "--markdown").splitlines()
    header = "| strategy | budget | tool recall | error coverage | error tool cov. | tokens |"
    assert markdown[:2] == [f"{header} examples |", "|---|---|---|---|---|---|---|"]
    assert [line.split(" | ")[0] for line in markdown[2:]] == ["| naive", "| warmstart"]
    shown = invoke("eval", "show", ident[:8], "--db", tau_db_url)
    assert shown.startswith(f"offline experiment {ident} (")
    listed = json.loads(invoke("eval", "list", "--db", tau_db_url, "--json"))
    assert [(e["id"], e["kind"], e["status"]) for e in listed] == [(ident, "offline", "complete")]
    assert listed[0]["what"] == "source all, budgets 2000"


def test_ab_partial_then_resume(
    openai_double: OpenAIDouble, tasks_file: Path, template_db: str
) -> None:
    openai_double.responder = scripted_model()
    common = ["--db", template_db]
    partial = json.loads(
        invoke(
            "eval",
            "ab",
            "--endpoint",
            openai_double.base_url,
            "--model",
            "double-model",
            "--tasks",
            str(tasks_file),
            "--template",
            "ws",
            "--trials",
            "1",
            "--context-length",
            "128000",
            "--max-runs",
            "1",
            "--json",
            *common,
        )
    )
    ident = partial["id"]
    assert (partial["status"], partial["ran_now"]) == ("running", 1)
    assert partial["config"]["environment"] == "workspace"
    assert "api_key" not in partial["config"]

    text = invoke("eval", "ab", "--resume", ident, "--endpoint", openai_double.base_url, *common)
    lines = text.splitlines()
    assert lines[:3] == [
        f"experiment {ident} (complete): 4/4 runs",
        "  cold: 2 measured",
        "  warm: 2 measured",
    ]
    assert "error rate, first 30 turns" in text and "0.333 [0.333, 0.333]" in text
    assert "partial" not in text

    shown = invoke("eval", "show", ident, "--runs", *common)
    assert shown.splitlines()[0] == f"experiment {ident} (complete): 4/4 runs"
    data = json.loads(invoke("eval", "show", ident, "--json", *common))
    assert len(data["runs"]) == 4 and data["summary"]["complete"] is True
    listed = json.loads(invoke("eval", "list", "--kind", "ab", "--json", *common))
    assert listed[0]["runs"] == 4 and "double-model on workspace" in listed[0]["what"]


def test_ab_needs_a_design(template_db: str) -> None:
    result = runner.invoke(app, ["eval", "ab", "--db", template_db])
    assert result.exit_code != 0
    assert "missing --model, --tasks, --template" in result.output
