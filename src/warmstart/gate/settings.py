"""The gate's settings: one pydantic-settings class, read from ``WARMSTART_GATE_*``.

List settings accept JSON (``'["a","b"]'``) or a comma-separated string.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from warmstart.paths import home

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})

# Actions that can never be auto-approved, whatever the allow-lists say. Entries are
# fnmatch patterns matched against the action name.
DEFAULT_HIGH_RISK: tuple[str, ...] = (
    "deploy_production",
    "deploy.production",
    "delete_data",
    "move_money",
    "transfer_money",
    "change_permissions",
    "wipe_database",
    "migrate_database",
    "run_remote_command",
    "publish_package",
    "rotate_keys",
    "shutdown_service",
)

StrList = Annotated[list[str], NoDecode]


def _split(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


class GateSettings(BaseSettings):
    """Everything ``warmstart gate serve`` can be told; env prefix ``WARMSTART_GATE_``."""

    model_config = SettingsConfigDict(env_prefix="WARMSTART_GATE_", extra="ignore")

    db_url: str | None = Field(default=None, description="SQLAlchemy URL; default SQLite file")
    host: str = "127.0.0.1"
    port: int = Field(default=6000, ge=0, le=65535)
    public_url: str | None = Field(default=None, description="base URL used in links")
    requester_tokens: StrList = Field(default_factory=list, description="NAME:TOKEN entries")
    approver_tokens: StrList = Field(default_factory=list, description="NAME:TOKEN entries")
    secret_key: SecretStr | None = Field(default=None, description="signs notification links")
    rate_limit: int = Field(default=10, ge=0, description="submissions per action per window")
    rate_window_seconds: int = Field(default=3600, ge=1)
    max_pending_per_requester: int = Field(default=20, ge=1)
    notify: StrList = Field(default_factory=list, description="apprise URLs, tried in order")
    auto_approve: StrList = Field(default_factory=list, description="actions approved at once")
    high_risk: StrList = Field(default_factory=lambda: list(DEFAULT_HIGH_RISK))
    default_timeout_seconds: int = 300
    min_timeout_seconds: int = 30
    max_timeout_seconds: int = 3600
    consume_window_seconds: int = Field(default=600, ge=1)
    sweep_interval_seconds: float = Field(default=1.0, gt=0)
    max_body_bytes: int = 1_048_576
    max_wait_seconds: int = 120

    @field_validator(
        "requester_tokens", "approver_tokens", "notify", "auto_approve", "high_risk", mode="before"
    )
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return _split(value)

    def database_url(self) -> str:
        """The configured URL, or a SQLite file in ``$WARMSTART_HOME``."""
        return self.db_url or f"sqlite:///{home() / 'gate.db'}"

    def base_url(self) -> str:
        """The URL people reach the gate at (for links in notifications)."""
        if self.public_url:
            return self.public_url.rstrip("/")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def tokens_configured(self) -> bool:
        """Whether any token is configured (otherwise the gate is loopback-only)."""
        return bool(self.requester_tokens or self.approver_tokens)
