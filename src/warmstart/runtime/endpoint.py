"""Which OpenAI-compatible endpoint, key, model and provider a run talks to.

Arguments win over the environment so a library caller is never surprised by a stray
variable; the ``WARMSTART_*`` variables win over the ``OPENAI_*`` ones so warmstart can
be pointed elsewhere without disturbing other OpenAI tools on the same machine.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit

from warmstart.errors import ConfigError

ENDPOINT_ENV = ("WARMSTART_ENDPOINT", "OPENAI_BASE_URL")
API_KEY_ENV = ("WARMSTART_API_KEY", "OPENAI_API_KEY")
MODEL_ENV = "WARMSTART_MODEL"
PROVIDER_ENV = "WARMSTART_PROVIDER"
DEFAULT_HOST = "api.openai.com"
PLACEHOLDER_KEY = "not-needed"
"""Sent when no key is configured: local servers ignore it, hosted ones answer 401."""


@dataclass(frozen=True)
class Endpoint:
    """A resolved endpoint: ``base_url`` None means the ``openai`` client's default."""

    model: str
    base_url: str | None
    api_key: str
    provider: str


def _first_env(names: tuple[str, ...]) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def resolve_base_url(base_url: str | None = None) -> str | None:
    """The base URL from the argument, ``$WARMSTART_ENDPOINT`` or ``$OPENAI_BASE_URL``."""
    value = base_url or _first_env(ENDPOINT_ENV)
    return value.rstrip("/") if value else None


def resolve_api_key(api_key: str | None = None) -> str | None:
    """The key from the argument, ``$WARMSTART_API_KEY`` or ``$OPENAI_API_KEY``."""
    return api_key or _first_env(API_KEY_ENV)


def provider_name(base_url: str | None, configured: str | None = None) -> str:
    """The provider a run reports: a configured name, else the base URL's host."""
    if configured:
        return configured
    if not base_url:
        return DEFAULT_HOST
    host = urlsplit(base_url).hostname
    return host or base_url


def resolve_endpoint(
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    provider: str | None = None,
) -> Endpoint:
    """Resolve every part of the endpoint; a missing model is a :class:`ConfigError`.

    A missing key is not an error: local servers (vLLM, Ollama, llama.cpp) need none, and
    a hosted API that does will answer 401, which the run records as data.
    """
    resolved_model = model or os.environ.get(MODEL_ENV)
    if not resolved_model:
        raise ConfigError(f"no model given: pass model= or set ${MODEL_ENV}")
    url = resolve_base_url(base_url)
    return Endpoint(
        model=resolved_model,
        base_url=url,
        api_key=resolve_api_key(api_key) or PLACEHOLDER_KEY,
        provider=provider_name(url, provider or os.environ.get(PROVIDER_ENV)),
    )
