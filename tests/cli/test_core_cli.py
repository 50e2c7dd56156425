"""The core commands, run as a user runs them: a real process, real files, real output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from warmstart.inject import validate_anthropic, validate_openai


def run(
    *args: str, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "warmstart", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "WARMSTART_RAISE_ERRORS": "", **(env or {})},
        timeout=120,
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'cli.db'}"


def test_ingest_build_inject_round_trip(db: str, tau_sample: Path, tmp_path: Path) -> None:
    out = run("ingest", str(tau_sample), "--db", db, "--json")
    report = json.loads(out.stdout)["reports"][0]
    assert (report["added"], report["calls"], report["skipped_total"]) == (200, 1164, 0)
    text = run("ingest", str(tau_sample), "--db", db).stdout
    assert "0 sessions added, 0 updated, 200 unchanged" in text

    listing = json.loads(run("sessions", "list", "--db", db, "--json", "--limit", "500").stdout)
    assert len(listing) == 200 and {"id", "calls", "failures", "outcome"} <= set(listing[0])
    shown = json.loads(run("sessions", "show", listing[0]["id"], "--db", db, "--json").stdout)
    assert shown["id"] == listing[0]["id"] and shown["calls"]

    built = json.loads(
        run(
            "build", "airline", "--budget", "2000", "--db", db, "--json", "--tags", "airline,prod"
        ).stdout
    )
    assert (
        built["version"] == 1 and len(built["tools"]) == 14 and built["tags"] == ["airline", "prod"]
    )

    warm = json.loads(
        run(
            "inject",
            "airline",
            "--task",
            "change my flight to May 20",
            "--format",
            "openai",
            "--db",
            db,
        ).stdout
    )
    validate_openai(warm)
    anth = json.loads(run("inject", "airline", "--format", "anthropic", "--db", db).stdout)
    validate_anthropic(anth["messages"])
    target = tmp_path / "prefill.json"
    run("inject", "airline", "--format", "hermes", "-o", str(target), "--db", db)
    assert json.loads(target.read_text())[0]["role"] == "user"

    stats = json.loads(run("templates", "stats", "--db", db, "--json").stdout)
    assert stats["templates"] == 1 and stats["uses"] == 3
    rows = json.loads(run("templates", "list", "--db", db, "--json", "--tags", "prod").stdout)
    assert [r["name"] for r in rows] == ["airline"]
    csv = run("templates", "list", "--db", db, "--csv").stdout.splitlines()
    assert csv[0].startswith("name,version") and csv[1].startswith("airline,1")

    exported = tmp_path / "airline.json"
    run("templates", "export", "airline", "-o", str(exported), "--db", db)
    run("templates", "import", str(exported), "--name", "airline-copy", "--db", db)
    session_id = listing[0]["id"]
    run("create", session_id, "--name", "single", "--type", "mixed", "--db", db)
    names = [r["name"] for r in json.loads(run("templates", "list", "--db", db, "--json").stdout)]
    assert names == ["airline", "airline-copy", "single"]
    run("templates", "delete", "single", "--db", db)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ingest", "/nonexistent/state.db"], "no such file"),
        (["inject", "ghost"], "no template 'ghost'"),
        (["build", "../etc/passwd"], "must not contain"),
        (["sessions", "show", "nope"], "no session 'nope'"),
        (["templates", "import", "/nonexistent.json"], "cannot read"),
        (["build", "x", "--type", "cooking"], "unknown task type"),
        (["inject"], "Missing argument"),
        (["sessions", "list", "--limit", "abc"], "Invalid value for '--limit'"),
    ],
)
def test_errors_are_one_line_without_traceback(args: list[str], message: str, db: str) -> None:
    proc = run(*args, "--db", db, check=False)
    assert proc.returncode != 0
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_ingest_reports_skips_and_exits_nonzero_only_when_nothing_read(
    db: str, tmp_path: Path
) -> None:
    good = tmp_path / "mixed.jsonl"
    good.write_text('{bad\n{"id": "a", "messages": [{"role": "user", "content": "hi"}]}\n')
    proc = run("ingest", str(good), "--db", db)
    assert "1 sessions added" in proc.stdout and "line is not JSON" in proc.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": "nope"}\n')
    proc = run("ingest", str(bad), "--db", db, check=False)
    assert proc.returncode == 1 and "line has no 'messages' list" in proc.stdout


def test_demo_runs_on_the_bundled_sample(tmp_path: Path) -> None:
    proc = run("demo", "--db", f"sqlite:///{tmp_path / 'demo.db'}")
    out = proc.stdout
    assert "200 sessions" in out and "1,164 tool calls" in out
    assert "14 distinct tools" in out and "store: sqlite:///" in out
    data = json.loads(run("demo", "--json", "--db", f"sqlite:///{tmp_path / 'd2.db'}").stdout)
    validate_openai(data["warm_history"])
    assert data["summary"]["sessions"] == 200


def test_help_explains_every_command() -> None:
    out = run("--help").stdout
    for cmd in ("ingest", "sessions", "create", "build", "templates", "inject", "demo"):
        assert cmd in out
