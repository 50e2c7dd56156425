"""The context-window guard: how long a model's window is, and whether it is long enough.

An agent whose window is too short for its tools, its system prompt and a warm history
fails late and confusingly (truncated prompts, forgotten instructions). The guard finds
the window before the first request and refuses clearly instead.

:func:`model_context_length` asks these sources in order and takes the first answer:

1. a configured length: the ``config_override`` argument or ``$WARMSTART_CONTEXT_LENGTH``
   (no probing at all: the operator knows best, and offline runs stay offline);
2. a live probe of the endpoint (about 2 s per request):
   ``GET {base}/models`` entries with ``max_model_len`` (vLLM), ``context_length``
   (OpenRouter, Together, LM Studio), ``context_window`` (Groq) or ``max_context_length``;
   Ollama's ``POST /api/show`` (``num_ctx`` from the model's parameters when set, as that
   is what Ollama actually serves, else ``model_info["<arch>.context_length"]``);
   llama.cpp's ``GET /props`` (``default_generation_settings.n_ctx`` or ``n_ctx``);
3. the cache ``$WARMSTART_HOME/context_lengths.json``, written after every successful
   probe, so a run still knows the window when the endpoint hides it for a moment;
4. a built-in table of model families, matched by prefix (longest prefix wins) on the
   lower-cased name without any ``vendor/`` part.

A probe that fails (connection refused, timeout, bad JSON) never blocks the run: it logs
a warning and the next source answers. After a connection failure or timeout the other
probe routes of that host are skipped, so a dead endpoint costs one timeout, not three.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from filelock import FileLock, Timeout

from warmstart.errors import ConfigError, ContextWindowTooSmall
from warmstart.paths import home
from warmstart.runtime.endpoint import resolve_api_key, resolve_base_url

log = logging.getLogger(__name__)

CONTEXT_LENGTH_ENV = "WARMSTART_CONTEXT_LENGTH"
CACHE_FILE = "context_lengths.json"
PROBE_TIMEOUT = 2.0
DEFAULT_MINIMUM = 64_000
DEFAULT_WARM_SHARE = 0.10
MODEL_LENGTH_KEYS = ("max_model_len", "context_length", "context_window", "max_context_length")

BUILTIN_CONTEXT_LENGTHS: Mapping[str, int] = {
    # OpenAI
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4-32k": 32_768,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "gpt-oss": 131_072,
    # Anthropic
    "claude": 200_000,
    # Google
    "gemini": 1_048_576,
    "gemini-1.5-pro": 2_097_152,
    "gemma-2": 8_192,
    "gemma2": 8_192,
    "gemma-3": 131_072,
    "gemma3": 131_072,
    # Meta (Hugging Face and Ollama spellings)
    "llama-3": 8_192,
    "llama3": 8_192,
    "meta-llama-3": 8_192,
    "llama-3.1": 131_072,
    "llama-3.2": 131_072,
    "llama-3.3": 131_072,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama3.3": 131_072,
    "meta-llama-3.1": 131_072,
    "hermes-3-llama-3.1": 131_072,
    "hermes3": 131_072,
    # Qwen: 32k as served by default; the 128k variants need YaRN configured
    "qwen2.5": 32_768,
    "qwen2.5-turbo": 1_000_000,
    "qwen3": 32_768,
    "qwen-plus": 131_072,
    "qwen-max": 32_768,
    # Mistral
    "mistral": 32_768,
    "mistral-large": 131_072,
    "mistral-medium": 131_072,
    "mistral-nemo": 131_072,
    "open-mistral-nemo": 131_072,
    "mixtral-8x7b": 32_768,
    "mixtral-8x22b": 65_536,
    "codestral": 32_768,
    # DeepSeek: the hosted API serves 64k; open weights 128k
    "deepseek": 65_536,
    "deepseek-v3": 131_072,
    "deepseek-r1": 131_072,
    # Others
    "command-r": 128_000,
    "phi-4": 16_384,
    "phi4": 16_384,
}


@dataclass(frozen=True)
class ContextLength:
    """A window length and where it came from (``config``, ``probe:/v1/models``, ...)."""

    length: int
    source: str


def warm_budget(context_length: int, share: float = DEFAULT_WARM_SHARE) -> int:
    """Tokens a warm history may use: ``share`` of the window (10 % by default).

    A tenth leaves the task, tool schemas and the agent's own turns nearly all the room
    while still fitting a handful of examples in a 32k window.
    """
    if not 0 < share <= 1:
        raise ConfigError(f"warm share must be in (0, 1], got {share}")
    return max(0, int(context_length * share))


def builtin_context_length(model: str) -> tuple[str, int] | None:
    """The longest table prefix matching ``model`` and its length, or None."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    best: tuple[str, int] | None = None
    for prefix, length in BUILTIN_CONTEXT_LENGTHS.items():
        if name.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, length)
    return best


def configured_context_length(config_override: int | None = None) -> int | None:
    """The configured length: the argument, else ``$WARMSTART_CONTEXT_LENGTH``."""
    if config_override is not None:
        value: object = config_override
        origin = "context length"
    else:
        value = os.environ.get(CONTEXT_LENGTH_ENV) or None
        origin = f"${CONTEXT_LENGTH_ENV}"
        if value is None:
            return None
    try:
        length = int(str(value).replace("_", "").replace(",", ""))
    except ValueError:
        raise ConfigError(f"{origin} must be a positive integer, got {value!r}") from None
    if length <= 0:
        raise ConfigError(f"{origin} must be a positive integer, got {value!r}")
    return length


# probing ------------------------------------------------------------------------


class _HostDown(Exception):
    """The endpoint did not answer at all; skip its other probe routes."""


def _root_url(base_url: str) -> str:
    """The server root for Ollama/llama.cpp routes: the base URL without a final ``/v1``."""
    parts = urlsplit(base_url.rstrip("/"))
    path = parts.path[:-3] if parts.path.endswith("/v1") else parts.path
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _get_json(client: httpx.Client, method: str, url: str, body: Any = None) -> Any:
    """JSON from ``url``; None for an HTTP error status, _HostDown when nothing answers."""
    try:
        response = client.request(method, url, json=body)
    except (httpx.ConnectError, httpx.TimeoutException) as exc:
        log.warning("context probe of %s failed (%s); using the next source", url, exc)
        raise _HostDown from exc
    except httpx.HTTPError as exc:
        log.warning("context probe of %s failed (%s); using the next source", url, exc)
        return None
    if response.status_code >= 400:
        log.debug("context probe of %s: HTTP %s", url, response.status_code)
        return None
    try:
        return response.json()
    except ValueError:
        log.warning("context probe of %s returned bad JSON; using the next source", url)
        return None


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and value > 0:
        return int(value)
    if isinstance(value, str) and value.strip().isdigit() and int(value) > 0:
        return int(value)
    return None


def _from_models(data: Any, model: str) -> int | None:
    entries = data.get("data") if isinstance(data, Mapping) else data
    if not isinstance(entries, list):
        return None
    wanted = model.lower()
    for entry in entries:
        if isinstance(entry, Mapping) and str(entry.get("id", "")).lower() == wanted:
            for key in MODEL_LENGTH_KEYS:
                length = _positive_int(entry.get(key))
                if length:
                    return length
    return None


def _from_ollama(data: Any) -> int | None:
    if not isinstance(data, Mapping):
        return None
    parameters = data.get("parameters")
    if isinstance(parameters, str):
        for line in parameters.splitlines():
            fields = line.split()
            if len(fields) == 2 and fields[0] == "num_ctx":
                length = _positive_int(fields[1])
                if length:
                    return length
    info = data.get("model_info")
    if isinstance(info, Mapping):
        for key, value in info.items():
            if str(key).endswith(".context_length"):
                length = _positive_int(value)
                if length:
                    return length
    return None


def _from_props(data: Any) -> int | None:
    if not isinstance(data, Mapping):
        return None
    settings = data.get("default_generation_settings")
    if isinstance(settings, Mapping):
        length = _positive_int(settings.get("n_ctx"))
        if length:
            return length
    return _positive_int(data.get("n_ctx"))


def probe_context_length(
    model: str,
    base_url: str,
    api_key: str | None = None,
    timeout: float = PROBE_TIMEOUT,
) -> ContextLength | None:
    """Ask the endpoint itself; None when it does not say (never raises for I/O)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    base = base_url.rstrip("/")
    root = _root_url(base)
    routes = (
        ("GET", f"{base}/models", None, lambda d: _from_models(d, model), "/v1/models"),
        ("POST", f"{root}/api/show", {"model": model, "name": model}, _from_ollama, "/api/show"),
        ("GET", f"{root}/props", None, _from_props, "/props"),
    )
    try:
        with httpx.Client(timeout=timeout, headers=headers) as client:
            for method, url, body, parse, label in routes:
                data = _get_json(client, method, url, body)
                length = parse(data) if data is not None else None
                if length:
                    return ContextLength(length, f"probe:{label}")
    except _HostDown:
        return None
    return None


# cache ----------------------------------------------------------------------------


def cache_path() -> Path:
    """``$WARMSTART_HOME/context_lengths.json``."""
    return home() / CACHE_FILE


def _read_cache(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable context cache %s: %s", path, exc)
        return {}
    return data if isinstance(data, dict) else {}


def cached_context_length(model: str, base_url: str) -> int | None:
    """The length last probed for ``model`` at ``base_url``, if any."""
    entry = _read_cache(cache_path()).get("endpoints", {}).get(base_url.rstrip("/"), {})
    value = entry.get(model) if isinstance(entry, dict) else None
    return _positive_int(value.get("length")) if isinstance(value, dict) else None


def write_cached_context_length(model: str, base_url: str, found: ContextLength) -> None:
    """Record a probe result; concurrent writers are serialised by a lock file.

    A cache that cannot be written costs a probe next time, never the run: failures are
    logged and swallowed.
    """
    path = cache_path()
    try:
        with FileLock(str(path) + ".lock", timeout=5):
            data = _read_cache(path)
            endpoints = data.setdefault("endpoints", {})
            if not isinstance(endpoints, dict):
                endpoints = data["endpoints"] = {}
            endpoints.setdefault(base_url.rstrip("/"), {})[model] = {
                "length": found.length,
                "source": found.source,
                "probed_at": time.time(),
            }
            data["version"] = 1
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".context_lengths.")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=1, sort_keys=True)
            os.replace(tmp, path)
    except (OSError, Timeout) as exc:
        log.warning("could not write context cache %s: %s", path, exc)


# public entry points ---------------------------------------------------------------


def resolve_context_length(
    model: str,
    base_url: str | None = None,
    config_override: int | None = None,
    *,
    api_key: str | None = None,
    timeout: float = PROBE_TIMEOUT,
) -> ContextLength | None:
    """Like :func:`model_context_length` but also says which source answered."""
    configured = configured_context_length(config_override)
    if configured is not None:
        return ContextLength(configured, "config")
    base = resolve_base_url(base_url)
    if base:
        found = probe_context_length(model, base, resolve_api_key(api_key), timeout)
        if found is not None:
            write_cached_context_length(model, base, found)
            return found
        cached = cached_context_length(model, base)
        if cached is not None:
            return ContextLength(cached, "cache")
    builtin = builtin_context_length(model)
    if builtin is not None:
        return ContextLength(builtin[1], f"builtin:{builtin[0]}")
    return None


def model_context_length(
    model: str,
    base_url: str | None = None,
    config_override: int | None = None,
    *,
    api_key: str | None = None,
) -> int | None:
    """The model's context window in tokens, or None when no source knows it.

    ``base_url`` defaults to ``$WARMSTART_ENDPOINT``/``$OPENAI_BASE_URL``; without any, no
    probe is made (the default OpenAI API does not report window sizes).
    """
    found = resolve_context_length(model, base_url, config_override, api_key=api_key)
    return found.length if found else None


def check_context(
    model: str,
    minimum: int = DEFAULT_MINIMUM,
    base_url: str | None = None,
    config_override: int | None = None,
    *,
    api_key: str | None = None,
) -> int:
    """The window length, raising :class:`ContextWindowTooSmall` when it is below ``minimum``.

    When no source knows the model the guard cannot judge: it logs a warning naming
    ``$WARMSTART_CONTEXT_LENGTH`` and returns ``minimum``, so budgets derived from the
    answer stay conservative and an unknown local model is not refused outright.
    """
    found = resolve_context_length(model, base_url, config_override, api_key=api_key)
    if found is None:
        log.warning(
            "context window of %r is unknown; assuming the minimum %s (set $%s)",
            model,
            minimum,
            CONTEXT_LENGTH_ENV,
        )
        return minimum
    if found.length < minimum:
        raise ContextWindowTooSmall(model, found.length, minimum, CONTEXT_LENGTH_ENV)
    return found.length
