"""Shared setup for the evaluation tests: a clean runtime environment, a workspace task
file, and a template that teaches the right first call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from warmstart.templates import import_template

CHECK = "python -c \"import sys; sys.exit(open('out.txt').read() != 'HELLO')\""


@pytest.fixture
def tasks_file(tmp_path: Path) -> Path:
    """Two workspace tasks: upper-case notes.txt into out.txt, checked by a command."""
    path = tmp_path / "tasks.jsonl"
    tasks = [
        {
            "id": "upper-a",
            "prompt": "Put notes.txt in upper case into out.txt",
            "files": {"notes.txt": "hello"},
            "check": CHECK,
        },
        {
            "id": "upper-b",
            "prompt": "Copy notes.txt upper-cased to out.txt, please",
            "files": {"notes.txt": "hello"},
            "check": CHECK,
        },
    ]
    path.write_text("\n".join(json.dumps(t) for t in tasks) + "\n")
    return path


@pytest.fixture
def template_db(sqlite_url: str) -> str:
    """A store holding template ``ws``: one example of the right ``read_file`` call."""
    import_template(
        {
            "format": "warmstart-template",
            "name": "ws",
            "examples": [
                {
                    "tool": "read_file",
                    "intent": "read the notes file",
                    "arguments": json.dumps({"path": "notes.txt"}),
                    "result": "hello",
                }
            ],
        },
        db=sqlite_url,
    )
    return sqlite_url
