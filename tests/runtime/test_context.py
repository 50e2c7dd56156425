"""The context-window guard: configured length, live probes, cache, built-in table."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest
from tests.support.openai_double import OpenAIDouble, http_error, raw, text

from warmstart.errors import ConfigError, ContextWindowTooSmall
from warmstart.runtime import (
    Runtime,
    ToolRegistry,
    check_context,
    model_context_length,
    resolve_context_length,
    warm_budget,
)
from warmstart.runtime.context import builtin_context_length, cache_path

PROBES = ("/v1/models", "/api/show", "/props")


def probe_paths(double: OpenAIDouble) -> list[str]:
    return [r.path for r in double.requests if r.path in PROBES]


@pytest.mark.parametrize("key", ["max_model_len", "context_length", "context_window"])
def test_probe_models_listing(key: str) -> None:
    models = [{"id": "other", key: 4096}, {"id": "served-model", key: 32768}]
    with OpenAIDouble(models=models, ollama_show={"model_info": {"x.context_length": 1}}) as double:
        found = resolve_context_length("served-model", double.base_url)
        assert found is not None
        assert (found.length, found.source) == (32768, "probe:/v1/models")
        assert probe_paths(double) == ["/v1/models"]  # first answer wins, no more probes


def test_probe_ollama_api_show() -> None:
    show = {"model_info": {"general.architecture": "llama", "llama.context_length": 131072}}
    with OpenAIDouble(ollama_show=show) as double:
        assert model_context_length("llama3.1:8b-custom", double.base_url) == 131072
        request = double.requests_to("/api/show")[0]
        assert request.json["model"] == "llama3.1:8b-custom"
        assert request.method == "POST"
        assert probe_paths(double) == ["/v1/models", "/api/show"]


def test_probe_ollama_prefers_configured_num_ctx() -> None:
    show = {
        "parameters": 'stop "<|eot_id|>"\nnum_ctx 16384',
        "model_info": {"llama.context_length": 131072},
    }
    with OpenAIDouble(ollama_show=show) as double:
        assert model_context_length("tuned", double.base_url) == 16384


@pytest.mark.parametrize(
    "props",
    [{"default_generation_settings": {"n_ctx": 8192}}, {"n_ctx": 8192, "total_slots": 1}],
)
def test_probe_llama_cpp_props(props: dict[str, object]) -> None:
    with OpenAIDouble(models=http_error(404), props=props) as double:
        found = resolve_context_length("local.gguf", double.base_url)
        assert found is not None and (found.length, found.source) == (8192, "probe:/props")
        assert probe_paths(double) == ["/v1/models", "/api/show", "/props"]


def test_probe_sends_the_api_key() -> None:
    with OpenAIDouble(models=[{"id": "m", "max_model_len": 40000}], api_key="sk-probe") as double:
        assert model_context_length("m", double.base_url, api_key="sk-probe") == 40000
        assert double.requests_to("/v1/models")[0].headers["authorization"] == "Bearer sk-probe"


def test_configured_length_skips_the_probe(openai_double: OpenAIDouble) -> None:
    assert model_context_length("m", openai_double.base_url, config_override=50_000) == 50_000
    assert openai_double.requests == []


def test_configured_length_from_env_skips_the_probe(
    openai_double: OpenAIDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WARMSTART_CONTEXT_LENGTH", "70_000")
    found = resolve_context_length("m", openai_double.base_url)
    assert found is not None and (found.length, found.source) == (70_000, "config")
    assert openai_double.requests == []


@pytest.mark.parametrize("value", ["lots", "0", "-5"])
def test_bad_configured_length(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("WARMSTART_CONTEXT_LENGTH", value)
    with pytest.raises(ConfigError, match="WARMSTART_CONTEXT_LENGTH"):
        model_context_length("gpt-4o")


def test_endpoint_down_fails_open(closed_base_url: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="warmstart.runtime.context")
    started = time.monotonic()
    found = resolve_context_length("gpt-4o-2024-08-06", closed_base_url)
    assert time.monotonic() - started < 2
    assert found is not None and (found.length, found.source) == (128_000, "builtin:gpt-4o")
    assert any("context probe" in r.getMessage() for r in caplog.records)
    assert check_context("gpt-4o", base_url=closed_base_url) == 128_000


def test_probe_timeout_fails_open_after_one_request() -> None:
    with OpenAIDouble(models=text("", delay=5)) as double:
        started = time.monotonic()
        found = resolve_context_length("claude-sonnet-4", double.base_url, timeout=0.3)
        assert time.monotonic() - started < 2
        assert found is not None and found.length == 200_000
        assert probe_paths(double) == ["/v1/models"]  # a silent host is not probed again


def test_bad_json_goes_to_the_next_source(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="warmstart.runtime.context")
    with OpenAIDouble(models=raw("{not json"), props={"n_ctx": 4096}) as double:
        assert model_context_length("m", double.base_url) == 4096
    assert any("bad JSON" in r.getMessage() for r in caplog.records)


def test_cache_written_after_probe_and_used_when_down(warmstart_home: Path) -> None:
    with OpenAIDouble(models=[{"id": "private-model", "max_model_len": 24576}]) as double:
        base = double.base_url
        assert model_context_length("private-model", base) == 24576
    data = json.loads(cache_path().read_text())
    assert cache_path().parent == warmstart_home
    entry = data["endpoints"][base]["private-model"]
    assert (entry["length"], entry["source"]) == (24576, "probe:/v1/models")
    # the endpoint is gone now; the model is in no table, so only the cache can answer
    found = resolve_context_length("private-model", base)
    assert found is not None and (found.length, found.source) == (24576, "cache")
    assert resolve_context_length("private-model", "http://127.0.0.1:1/v1") is None


def test_corrupt_cache_is_ignored(closed_base_url: str) -> None:
    cache_path().write_text("{broken")
    assert model_context_length("claude-3-opus", closed_base_url) == 200_000


@pytest.mark.parametrize(
    ("model", "length"),
    [
        ("gpt-4o-mini", 128_000),
        ("gpt-4.1-mini", 1_047_576),
        ("gpt-4-0613", 8_192),
        ("openai/gpt-5-mini", 400_000),
        ("claude-3-5-sonnet-20241022", 200_000),
        ("meta-llama/Llama-3.1-8B-Instruct", 131_072),
        ("llama3.1:8b", 131_072),
        ("Qwen/Qwen2.5-7B-Instruct", 32_768),
        ("mistral-large-latest", 131_072),
        ("gemini-2.5-pro", 1_048_576),
        ("deepseek-chat", 65_536),
    ],
)
def test_builtin_table(model: str, length: int) -> None:
    assert model_context_length(model) == length


def test_builtin_longest_prefix_wins() -> None:
    assert builtin_context_length("gpt-4o") == ("gpt-4o", 128_000)
    assert builtin_context_length("gpt-4-turbo-preview") == ("gpt-4-turbo", 128_000)
    assert builtin_context_length("mixtral-8x22b-instruct") == ("mixtral-8x22b", 65_536)
    assert builtin_context_length("totally-new-model") is None
    assert model_context_length("totally-new-model") is None


def test_too_small_names_model_length_minimum_and_setting() -> None:
    with pytest.raises(ContextWindowTooSmall) as caught:
        check_context("tiny-model", minimum=64_000, config_override=32_768)
    error = caught.value
    assert (error.model, error.length, error.minimum) == ("tiny-model", 32_768, 64_000)
    assert error.setting == "WARMSTART_CONTEXT_LENGTH"
    message = str(error)
    for part in ("'tiny-model'", "32,768", "64,000", "WARMSTART_CONTEXT_LENGTH"):
        assert part in message


def test_check_context_passes_and_unknown_assumes_minimum() -> None:
    assert check_context("gpt-4o") == 128_000
    assert check_context("mystery-model", minimum=50_000) == 50_000


def test_run_refused_when_window_too_small(openai_double: OpenAIDouble) -> None:
    openai_double.models = [{"id": "small", "max_model_len": 8192}]
    runtime = Runtime(ToolRegistry(), model="small", base_url=openai_double.base_url)
    result = runtime.run("hello")

    assert result.stop_reason == "context_too_small"
    assert "8,192" in result.errors[0].message
    assert result.context_length == 8192
    assert openai_double.chat_requests == []
    with pytest.raises(ContextWindowTooSmall):
        runtime.check_context()


def test_runtime_probes_once_per_runtime(openai_double: OpenAIDouble) -> None:
    openai_double.models = [{"id": "big", "max_model_len": 131072}]
    openai_double.enqueue(text("one"), text("two"))
    runtime = Runtime(ToolRegistry(), model="big", base_url=openai_double.base_url)
    first, second = runtime.run("a"), runtime.run("b")
    assert (first.context_length, first.context_source) == (131072, "probe:/v1/models")
    assert second.context_length == 131072
    assert len(openai_double.requests_to("/v1/models")) == 1
    assert "131,072 tokens" in openai_double.chat_requests[0]["messages"][0]["content"]


def test_bad_configured_length_stops_the_run(
    openai_double: OpenAIDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WARMSTART_CONTEXT_LENGTH", "big")
    result = Runtime(ToolRegistry(), model="m", base_url=openai_double.base_url).run("hi")
    assert result.stop_reason == "config_error"
    assert openai_double.requests == []


def test_warm_budget() -> None:
    assert warm_budget(128_000) == 12_800
    assert warm_budget(32_768, share=0.25) == 8_192
    with pytest.raises(ConfigError):
        warm_budget(1000, share=0)
    with pytest.raises(ConfigError):
        warm_budget(1000, share=1.5)
