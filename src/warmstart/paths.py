"""Where warmstart keeps its files: one user directory, overridable by one env var.

``$WARMSTART_HOME`` (default ``~/.warmstart``) holds the default SQLite store and
``config.toml``; ``$WARMSTART_DB`` (or ``--db``) points at any SQLAlchemy URL instead.
"""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """The user directory, created on first use."""
    path = Path(os.environ.get("WARMSTART_HOME") or Path.home() / ".warmstart").expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_db_url() -> str:
    """The store URL: ``$WARMSTART_DB`` or a SQLite file in the user directory."""
    url = os.environ.get("WARMSTART_DB")
    if url:
        return url
    return f"sqlite:///{home() / 'warmstart.db'}"


def config_path() -> Path:
    """The optional TOML configuration file."""
    return home() / "config.toml"
