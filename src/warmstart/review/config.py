"""Review settings: where the stores live, when reviews fire, and how they run.

The memory and skill stores live in a *home* directory laid out like Hermes Agent's
(``memories/MEMORY.md``, ``memories/USER.md``, ``skills/``, ``pending/``), so pointing
warmstart at ``~/.hermes`` makes both tools share one memory. The home is, first found:

1. an explicit argument (``--home`` on the command line, ``ReviewConfig(home=...)``);
2. ``$HERMES_HOME``, so a shell already set up for Hermes needs nothing else;
3. ``home`` in the ``[review]`` table of ``$WARMSTART_HOME/config.toml``;
4. ``$WARMSTART_HOME`` itself.

Every other setting can be given in the same table::

    [review]
    memory_every = 10        # user turns between memory reviews
    skills_every = 10        # tool iterations between skill reviews
    max_turns = 16           # request limit of one review
    memory_char_limit = 2200
    user_char_limit = 1375
    write_approval = false   # stage writes for `warmstart memory approve` instead
    notifications = true     # print the one-line summary after a review

    [review.prompts]         # files replacing the packaged prompts
    memory = "prompts/memory.md"
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from importlib import resources
from pathlib import Path
from typing import Any, Literal, get_args

from warmstart.errors import ConfigError
from warmstart.paths import config_path
from warmstart.paths import home as warmstart_home

ReviewKind = Literal["memory", "skills", "both"]
"""What a review looks at: the user (memory), how to do tasks (skills), or both."""

REVIEW_KINDS: tuple[str, ...] = get_args(ReviewKind)
HERMES_HOME_ENV = "HERMES_HOME"
DEFAULT_MEMORY_LIMIT = 2_200
DEFAULT_USER_LIMIT = 1_375


def check_kind(kind: str) -> ReviewKind:
    """``kind`` if it names a review, else a :class:`ConfigError` listing the choices."""
    if kind not in REVIEW_KINDS:
        raise ConfigError(f"unknown review kind {kind!r}; use one of {', '.join(REVIEW_KINDS)}")
    return kind  # type: ignore[return-value]


def resolve_home(explicit: str | Path | None = None, configured: str | Path | None = None) -> Path:
    """The store home: argument, ``$HERMES_HOME``, configured, then ``$WARMSTART_HOME``.

    The environment beats the config file so a one-off ``HERMES_HOME=... warmstart``
    works without editing anything; the directory is not created here (reading an
    empty home is fine, and writers create what they need).
    """
    for candidate in (explicit, os.environ.get(HERMES_HOME_ENV) or None, configured):
        if candidate:
            return Path(candidate).expanduser()
    return warmstart_home()


@dataclass(frozen=True)
class ReviewConfig:
    """Everything a :class:`~warmstart.review.Reviewer` can be told.

    ``model``, ``base_url`` and ``api_key`` are only used when the reviewer has no main
    :class:`~warmstart.runtime.Runtime` to inherit them from (a script, the CLI); when
    it runs as the runtime's hook it always uses the main run's endpoint, model and
    credentials so the provider's prompt cache is shared. ``prompts`` maps a review
    kind to prompt *text* replacing the packaged one. ``home`` is an explicit home (it
    beats ``$HERMES_HOME``); ``config_home`` is the one named in the config file (it
    only beats ``$WARMSTART_HOME``).
    """

    enabled: bool = True
    home: Path | None = None
    config_home: Path | None = None
    memory_every: int = 10
    skills_every: int = 10
    max_turns: int = 16
    memory_char_limit: int = DEFAULT_MEMORY_LIMIT
    user_char_limit: int = DEFAULT_USER_LIMIT
    write_approval: bool = False
    notifications: bool = True
    platform: str = "warmstart"
    session_id: str | None = None
    parent_session_id: str | None = None
    prompts: Mapping[str, str] = field(default_factory=dict)
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    request_timeout: float = 120.0

    def __post_init__(self) -> None:
        for name in ("memory_every", "skills_every"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be 0 (never) or more, got {getattr(self, name)}")
        for name in ("max_turns", "memory_char_limit", "user_char_limit"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        for kind in self.prompts:
            check_kind(kind)

    @property
    def resolved_home(self) -> Path:
        """The store home this config points at (see the module docstring)."""
        return resolve_home(self.home, self.config_home)

    def prompt(self, kind: ReviewKind) -> str:
        """The review prompt for ``kind``: the configured override, else the packaged one."""
        override = self.prompts.get(kind)
        if override:
            return override
        return packaged_prompt(kind)

    @classmethod
    def load(cls, path: Path | None = None, **overrides: Any) -> ReviewConfig:
        """Read ``[review]`` from the config file (missing file: defaults), then apply
        keyword ``overrides`` (None values are ignored, so CLI flags can pass through)."""
        path = path or config_path()
        section: dict[str, Any] = {}
        if path.exists():
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                raise ConfigError(f"{path}: cannot read config: {exc}") from exc
            section = data.get("review", {})
            if not isinstance(section, dict):
                raise ConfigError(f"{path}: [review] must be a table")
        config = config_from_mapping(section, origin=str(path), base=path.parent)
        changes = {k: v for k, v in overrides.items() if v is not None}
        return replace(config, **changes) if changes else config


def packaged_prompt(kind: ReviewKind) -> str:
    """The prompt shipped as package data (``warmstart/review/prompts/<kind>.md``)."""
    check_kind(kind)
    resource = resources.files("warmstart.review").joinpath("prompts", f"{kind}.md")
    return resource.read_text(encoding="utf-8").strip()


def config_from_mapping(
    section: Mapping[str, Any], origin: str = "config", base: Path | None = None
) -> ReviewConfig:
    """Build a config from a ``[review]`` mapping, naming any bad key or value.

    Prompt entries are file paths, relative to ``base`` (the config file's folder).
    """
    known = {f.name for f in fields(ReviewConfig)} - {
        "session_id",
        "parent_session_id",
        "config_home",
    }
    unknown = set(section) - known
    if unknown:
        raise ConfigError(f"{origin}: unknown [review] keys: {', '.join(sorted(unknown))}")
    values: dict[str, Any] = {}
    for key, value in section.items():
        if key == "home":
            values["config_home"] = Path(str(value)).expanduser()
        elif key == "prompts":
            values[key] = _prompt_files(value, origin, base)
        elif key in {"enabled", "write_approval", "notifications"}:
            if not isinstance(value, bool):
                raise ConfigError(f"{origin}: [review] {key} must be true or false")
            values[key] = value
        elif key in {"platform", "model", "base_url", "api_key"}:
            values[key] = str(value)
        elif key == "request_timeout":
            values[key] = float(value)
        else:
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(f"{origin}: [review] {key} must be an integer")
            values[key] = value
    try:
        return ReviewConfig(**values)
    except ConfigError as exc:
        raise ConfigError(f"{origin}: {exc}") from exc


def _prompt_files(value: Any, origin: str, base: Path | None) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(f"{origin}: [review.prompts] must be a table of kind = file")
    prompts: dict[str, str] = {}
    for kind, file in value.items():
        check_kind(kind)
        path = Path(str(file)).expanduser()
        if not path.is_absolute() and base is not None:
            path = base / path
        try:
            prompts[kind] = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{origin}: cannot read the {kind} prompt {path}: {exc}") from exc
    return prompts
