"""Mining configuration: tool categories, trivial tools, truncation, thresholds.

Defaults follow the brief; ``$WARMSTART_HOME/config.toml`` overrides any of them::

    [mining]
    result_chars = 500
    trivial_tools = ["clarify", "memory"]

    [mining.categories]
    code = ["execute_code", "terminal"]
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from warmstart.errors import ConfigError
from warmstart.paths import config_path

DEFAULT_CATEGORIES: dict[str, tuple[str, ...]] = {
    "code": (
        "execute_code",
        "run_code",
        "python",
        "terminal",
        "shell",
        "bash",
        "run_tests",
        "process",
    ),
    "file": (
        "read_file",
        "write_file",
        "patch",
        "search_files",
        "edit_file",
        "list_files",
        "list_directory",
        "create_file",
        "delete_file",
    ),
    "research": ("web_search", "web_fetch", "web_extract", "browser_*", "fetch_url", "search"),
}

DEFAULT_TRIVIAL = ("clarify", "memory", "fact_store", "fact_feedback")


@dataclass(frozen=True)
class MiningConfig:
    """Everything the miner and classifier can be told."""

    categories: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(DEFAULT_CATEGORIES))
    trivial_tools: tuple[str, ...] = DEFAULT_TRIVIAL
    result_chars: int = 500
    majority: float = 0.6
    recovery_window: int = 3
    marathon_messages: int = 100
    short_messages: int = 20
    _cache: dict[str, str | None] = field(
        default_factory=dict, init=False, compare=False, repr=False, hash=False
    )

    def category_of(self, tool: str) -> str | None:
        """The category a tool belongs to, with ``prefix*`` patterns allowed (memoised)."""
        try:
            return self._cache[tool]
        except KeyError:
            found = self._cache[tool] = self._lookup(tool)
            return found

    def _lookup(self, tool: str) -> str | None:
        for category, names in self.categories.items():
            for name in names:
                if name.endswith("*"):
                    if tool.startswith(name[:-1]):
                        return category
                elif tool == name:
                    return category
        return None


def load_config(path: Path | None = None) -> MiningConfig:
    """Read ``[mining]`` from the config file; missing file means defaults."""
    path = path or config_path()
    if not path.exists():
        return MiningConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config: {exc}") from exc
    return config_from_mapping(data.get("mining", {}), origin=str(path))


def config_from_mapping(section: dict[str, Any], origin: str = "config") -> MiningConfig:
    """Build a config from a ``[mining]`` mapping, naming any bad key."""
    known = {f.name for f in fields(MiningConfig) if f.init}
    unknown = set(section) - known
    if unknown:
        raise ConfigError(f"{origin}: unknown [mining] keys: {', '.join(sorted(unknown))}")
    cfg = MiningConfig()
    changes: dict[str, Any] = {}
    for key, value in section.items():
        if key == "categories":
            if not isinstance(value, dict):
                raise ConfigError(f"{origin}: [mining.categories] must be a table")
            changes[key] = {str(k): tuple(str(t) for t in v) for k, v in value.items()}
        elif key == "trivial_tools":
            changes[key] = tuple(str(t) for t in value)
        elif key == "majority":
            changes[key] = float(value)
            if not 0.5 <= changes[key] <= 1.0:
                raise ConfigError(f"{origin}: majority must be between 0.5 and 1.0")
        else:
            if not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{origin}: {key} must be a positive integer")
            changes[key] = value
    return replace(cfg, **changes)
