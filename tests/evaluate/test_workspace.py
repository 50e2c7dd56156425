"""The workspace environment: tools that work inside their directory and refuse to leave."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from warmstart.evaluate import EnvironmentUnavailable, load_environment
from warmstart.evaluate.environments.workspace import Workspace, WorkspaceEnvironment
from warmstart.evaluate.errors import SandboxViolation
from warmstart.runtime import run_tool


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    (tmp_path / "secret.txt").write_text("outside")
    return Workspace(root, code_timeout=2.0)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/etc/passwd", "absolute paths are not allowed"),
        ("../secret.txt", "'..' is not allowed"),
        ("sub/../../secret.txt", "'..' is not allowed"),
        ("..\\secret.txt", "'..' is not allowed"),
        ("~/secret.txt", "absolute paths are not allowed"),
        ("C:/Windows/win.ini", "absolute paths are not allowed"),
        ("", "non-empty relative path"),
        ("notes\x00.txt", "NUL"),
    ],
)
def test_escapes_are_refused_for_every_file_tool(ws: Workspace, path: str, message: str) -> None:
    for tool, args in (
        (ws.read_file, {"path": path}),
        (ws.write_file, {"path": path, "content": "x"}),
        (ws.search_files, {"pattern": "o", "path": path}),
    ):
        with pytest.raises(SandboxViolation, match=message):
            tool(args)
    assert (ws.root.parent / "secret.txt").read_text() == "outside"


def test_symlink_out_of_the_workspace_is_refused(ws: Workspace) -> None:
    os.symlink(ws.root.parent / "secret.txt", ws.root / "link.txt")
    os.symlink(ws.root.parent, ws.root / "up")
    with pytest.raises(SandboxViolation, match="leads outside"):
        ws.read_file({"path": "link.txt"})
    with pytest.raises(SandboxViolation, match="leads outside"):
        ws.write_file({"path": "up/secret.txt", "content": "pwned"})
    assert "outside" not in ws.search_files({"pattern": "outside"})
    assert (ws.root.parent / "secret.txt").read_text() == "outside"


def test_tools_work_inside(ws: Workspace) -> None:
    assert ws.read_file({"path": "notes.txt"}) == "alpha\nbeta\n"
    assert ws.write_file({"path": "sub/out.txt", "content": "beta gamma"}) == (
        "wrote 10 characters to sub/out.txt"
    )
    assert ws.search_files({"pattern": "^beta"}) == "notes.txt:2: beta\nsub/out.txt:1: beta gamma"
    assert ws.search_files({"pattern": "zeta"}) == "no matches"
    with pytest.raises(ValueError, match="invalid regular expression"):
        ws.search_files({"pattern": "("})
    with pytest.raises(FileNotFoundError, match=r"no such file: nope\.txt"):
        ws.read_file({"path": "nope.txt"})
    with pytest.raises(ValueError, match="missing required argument 'content'"):
        ws.write_file({"path": "x.txt"})


def test_code_runs_in_the_workspace_with_a_timeout(ws: Workspace) -> None:
    done = ws.execute_code(
        {"code": "import os; print(os.getcwd()); print(open('notes.txt').read())"}
    )
    assert done["exit_code"] == 0
    assert done["stdout"].splitlines()[:2] == [str(ws.root.resolve()), "alpha"]
    failed = ws.execute_code({"code": "raise SystemExit('bad input')"})
    assert failed["exit_code"] == 1 and "bad input" in failed["stderr"]
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"timed out after 0\.5 s"):
        ws.execute_code({"code": "import time; time.sleep(30)", "timeout": 0.5})
    assert time.monotonic() - started < 5
    tool = ws.registry().get("execute_code")
    assert tool is not None
    outcome = run_tool(tool, {"code": "while True: pass", "timeout": 0.3}, timeout=10)
    assert not outcome.ok and outcome.error_kind == "exception" and "timed out" in outcome.content


def test_check_command_decides_success(ws: Workspace) -> None:
    assert ws.run_check("test -f notes.txt")
    assert not ws.run_check("test -f missing.txt")
    assert ws.run_check(["python", "-c", "print('argv form')"])


def test_task_file_and_episodes(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        "# a comment\n\n"
        + json.dumps(
            {"id": "a", "prompt": "do it", "files": {"d/in.txt": "x"}, "check": "test -f d/out.txt"}
        )
        + "\n"
        + json.dumps({"turns": ["first", "second"]})
        + "\n"
    )
    env = load_environment("workspace", str(tasks))
    assert isinstance(env, WorkspaceEnvironment)
    assert [t.id for t in env.tasks] == ["a", "task-4"]
    assert env.tasks[1].turns == ["first", "second"]
    with env.episode(env.tasks[0]) as episode:
        root = episode.workspace.root  # type: ignore[attr-defined]
        assert (root / "d" / "in.txt").read_text() == "x"
        assert sorted(episode.tools.names()) == [
            "execute_code",
            "read_file",
            "search_files",
            "write_file",
        ]
        assert episode.check() is False
        (root / "d" / "out.txt").write_text("done")
        assert episode.check() is True
    assert not root.exists()
    with env.episode(env.tasks[1]) as episode:
        assert episode.check() is None  # no check command: cannot tell


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "not JSON"),
        ('{"id": "x"}', "needs a 'prompt'"),
        ('{"prompt": "p", "files": {"../x": "y"}}', "'..' is not allowed"),
        ('{"prompt": "p", "check": 3}', "'check' must be"),
    ],
)
def test_bad_task_files_are_refused(tmp_path: Path, line: str, message: str) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(line + "\n")
    with pytest.raises(EnvironmentUnavailable, match=message):
        load_environment("workspace", str(tasks))


def test_missing_and_empty_task_files(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentUnavailable, match="cannot read tasks file"):
        load_environment("workspace", str(tmp_path / "nope.jsonl"))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(EnvironmentUnavailable, match="no tasks"):
        load_environment("workspace", str(empty))
    dupes = tmp_path / "dupes.jsonl"
    dupes.write_text('{"id": "a", "prompt": "p"}\n{"id": "a", "prompt": "q"}\n')
    with pytest.raises(EnvironmentUnavailable, match="duplicate task ids: a"):
        load_environment("workspace", str(dupes))
