"""The README's CLI reference names every command the CLI has (so it cannot go stale)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from warmstart.cli import app

README = Path(__file__).resolve().parents[2] / "README.md"


def command_paths(group: Any, prefix: str = "warmstart") -> list[str]:
    """Every leaf command as ``warmstart group sub``."""
    paths = []
    for name, cmd in getattr(group, "commands", {}).items():
        if getattr(cmd, "hidden", False):
            continue
        path = f"{prefix} {name}"
        if getattr(cmd, "commands", None):
            paths.extend(command_paths(cmd, path))
        else:
            paths.append(path)
    return paths


def test_every_command_is_in_the_readme() -> None:
    text = README.read_text(encoding="utf-8")
    paths = command_paths(typer.main.get_command(app))
    assert len(paths) > 10
    missing = [p for p in paths if f"`{p}" not in text]
    assert not missing, f"README CLI reference lacks: {missing}"


def test_every_command_has_help_text() -> None:
    root = typer.main.get_command(app)

    def walk(cmd: Any, path: str) -> list[str]:
        bad = [] if (cmd.help or cmd.short_help) else [path]
        for name, sub in getattr(cmd, "commands", {}).items():
            bad += walk(sub, f"{path} {name}")
        return bad

    assert walk(root, "warmstart") == []


def test_cli_start_up_stays_light() -> None:
    """`warmstart --help` must not import the model client or the web servers."""
    import subprocess
    import sys

    code = (
        "import sys, warmstart.cli; "
        "print(','.join(m for m in ('openai', 'mcp', 'uvicorn', 'playwright') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
