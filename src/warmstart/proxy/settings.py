"""The proxy's settings: one pydantic-settings class, read from ``WARMSTART_PROXY_*``.

Every option of ``warmstart proxy`` is a field here, so the CLI, the tests and a
deployment that configures the proxy through its environment all build the same
object and get the same validation.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_PORT = 8787
DEFAULT_MAX_BODY = 32 * 1024 * 1024
"""Chat bodies carry whole conversations and sometimes base64 images: 32 MiB by default."""


class ProxySettings(BaseSettings):
    """Everything ``warmstart proxy`` can be told; env prefix ``WARMSTART_PROXY_``."""

    model_config = SettingsConfigDict(env_prefix="WARMSTART_PROXY_", extra="ignore")

    upstream: str = Field(description="OpenAI-compatible base URL, e.g. https://api.openai.com/v1")
    host: str = "127.0.0.1"
    port: int = Field(default=DEFAULT_PORT, ge=0, le=65535)
    template: str | None = Field(default=None, description="inject this template's history")
    auto: bool = Field(default=False, description="pick the best template per conversation")
    record: bool = Field(default=False, description="write every conversation to the store")
    ab: float | None = Field(default=None, ge=0.0, le=1.0, description="share of warm arm")
    db_url: str | None = Field(default=None, description="store URL (default $WARMSTART_DB)")
    budget: int | None = Field(default=None, gt=0, description="cap on warm tokens")
    warm_share: float = Field(default=0.10, gt=0.0, le=1.0, description="window share")
    context_length: int | None = Field(default=None, gt=0, description="known window size")
    min_context: int = Field(default=8192, ge=0, description="go cold below this window")
    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY, gt=0)
    connect_timeout: float = Field(default=10.0, gt=0)
    read_timeout: float = Field(default=600.0, gt=0, description="seconds between bytes")
    max_connections: int = Field(default=256, ge=1)
    max_conversations: int = Field(default=10_000, ge=1, description="prefixes kept in memory")

    @field_validator("upstream")
    @classmethod
    def _upstream(cls, value: str) -> str:
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"upstream must be an http(s) URL like https://host/v1, got {value!r}")
        return value.strip().rstrip("/")

    @field_validator("template")
    @classmethod
    def _template(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from warmstart.errors import InvalidNameError
        from warmstart.names import validate_name

        try:
            return validate_name(value)
        except InvalidNameError as exc:
            raise ValueError(str(exc)) from None

    @model_validator(mode="after")
    def _one_source(self) -> ProxySettings:
        if self.template and self.auto:
            raise ValueError("choose either a template or auto, not both")
        return self

    @property
    def injects(self) -> bool:
        """Whether any conversation can be warmed (a template or auto)."""
        return bool(self.template or self.auto)
