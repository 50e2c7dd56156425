"""What reaches the client when the upstream fails or the input is bad: the upstream's own
answer when there is one, a clear OpenAI-shaped error or a cold pass-through otherwise,
and never a hung connection."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI
from tests.proxy.conftest import RunningProxy
from tests.support.openai_double import OpenAIDouble, drop, http_error, raw, text

from warmstart.errors import TemplateError
from warmstart.inject import ADDENDUM
from warmstart.proxy import ProxySettings, create_app
from warmstart.store import Store

SYSTEM = {"role": "system", "content": "You are an airline agent."}
TASK = {"role": "user", "content": "I want to change the flight on my reservation"}


def client(proxy: RunningProxy) -> OpenAI:
    return OpenAI(base_url=proxy.base_url, api_key="sk-test", max_retries=0, timeout=20)


def chat(proxy: RunningProxy, **extra: Any) -> Any:
    return client(proxy).chat.completions.create(
        model="double-model",
        messages=[SYSTEM, TASK],  # type: ignore[list-item]
        **extra,
    )


@pytest.fixture
def proxy(
    start_proxy: Callable[..., RunningProxy], openai_double: OpenAIDouble, store_url: str
) -> RunningProxy:
    return start_proxy(
        upstream=openai_double.base_url,
        template="airline",
        db_url=store_url,
        context_length=128_000,
        read_timeout=1.0,
        max_body_bytes=64_000,
    )


def sse_event(content: str) -> bytes:
    chunk = {
        "id": "chatcmpl-x",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "double-model",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}],
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


def chunked_then_cut(close: bool) -> Any:
    """A stream that starts well and then breaks: one complete event, then half a chunk.

    With ``close`` the upstream hangs up (a crash); without, it goes silent (a stall).
    """
    event = sse_event("Hel")
    body = b"%X\r\n" % len(event) + event + b"\r\n" + b'40\r\ndata: {"choi'
    headers = {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}
    if close:
        headers["Connection"] = "close"
    return raw(body, headers=headers)


def test_rate_limits_come_back_with_status_body_and_retry_after(
    proxy: RunningProxy, openai_double: OpenAIDouble
) -> None:
    openai_double.enqueue(http_error(429, "slow down", headers={"Retry-After": "7"}))
    with pytest.raises(openai.RateLimitError) as caught:
        chat(proxy)
    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "7"
    assert caught.value.body == {
        "message": "slow down",
        "type": "double_error",
        "param": None,
        "code": None,
    }


def test_server_errors_come_back_as_sent_streaming_or_not(
    proxy: RunningProxy, openai_double: OpenAIDouble
) -> None:
    openai_double.enqueue(http_error(503, "overloaded"), http_error(500, "boom"))
    with pytest.raises(openai.InternalServerError) as caught:
        chat(proxy)
    assert caught.value.status_code == 503 and "overloaded" in str(caught.value)
    with pytest.raises(openai.InternalServerError) as streamed:
        chat(proxy, stream=True)
    assert streamed.value.status_code == 500 and "boom" in str(streamed.value)


def test_a_silent_upstream_is_a_504_after_the_timeout(
    proxy: RunningProxy, openai_double: OpenAIDouble
) -> None:
    openai_double.enqueue(text("too late", delay=5))
    started = time.monotonic()
    with pytest.raises(openai.APIStatusError) as caught:
        chat(proxy)
    assert time.monotonic() - started < 4
    assert caught.value.status_code == 504
    assert caught.value.body["code"] == "upstream_timeout"  # type: ignore[index]


def test_an_upstream_that_hangs_up_before_answering_is_a_502(
    proxy: RunningProxy, openai_double: OpenAIDouble
) -> None:
    openai_double.enqueue(drop())
    with pytest.raises(openai.APIStatusError) as caught:
        chat(proxy)
    assert caught.value.status_code == 502
    assert caught.value.body["code"] == "upstream_disconnected"  # type: ignore[index]


def test_an_unreachable_upstream_is_a_502_at_once(
    start_proxy: Callable[..., RunningProxy], closed_base_url: str
) -> None:
    proxy = start_proxy(upstream=closed_base_url)
    started = time.monotonic()
    with pytest.raises(openai.APIStatusError) as caught:
        chat(proxy)
    assert time.monotonic() - started < 3
    assert caught.value.status_code == 502
    body: Any = caught.value.body
    assert body["code"] == "upstream_unreachable" and closed_base_url in body["message"]


@pytest.mark.parametrize("close", [True, False], ids=["crash", "stall"])
def test_a_stream_that_breaks_midway_breaks_for_the_client_too(
    proxy: RunningProxy, openai_double: OpenAIDouble, close: bool
) -> None:
    openai_double.enqueue(chunked_then_cut(close))
    received: list[str] = []
    started = time.monotonic()
    with pytest.raises((httpx.HTTPError, openai.APIError)):
        for chunk in chat(proxy, stream=True):
            received.append(chunk.choices[0].delta.content or "")
    assert received == ["Hel"], "what arrived before the break is relayed"
    assert time.monotonic() - started < 5


def test_a_client_that_goes_away_does_not_wedge_the_proxy(
    proxy: RunningProxy, openai_double: OpenAIDouble
) -> None:
    openai_double.enqueue(text("slow", delay=0.8), text("fine"))
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            f"{proxy.base_url}/chat/completions",
            json={"model": "double-model", "messages": [SYSTEM, TASK]},
            timeout=0.2,
        )
    assert chat(proxy).choices[0].message.content == "fine"


def test_malformed_json_and_non_objects_are_400(proxy: RunningProxy) -> None:
    url = f"{proxy.base_url}/chat/completions"
    bad = httpx.post(url, content=b'{"model": "x", "messages": [', timeout=5)
    assert bad.status_code == 400
    assert bad.json()["error"]["code"] == "invalid_json"
    assert bad.json()["error"]["message"].startswith("request body is not valid JSON")
    listed = httpx.post(url, json=[1, 2], timeout=5)
    assert listed.status_code == 400
    assert listed.json()["error"]["message"] == "request body must be a JSON object"


def test_a_request_without_messages_goes_to_the_upstream_to_judge(
    proxy: RunningProxy, openai_double: OpenAIDouble
) -> None:
    openai_double.enqueue(http_error(400, "messages is required"))
    response = httpx.post(f"{proxy.base_url}/chat/completions", json={"model": "m"}, timeout=5)
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "messages is required"
    assert response.headers["x-warmstart-warm"] == "cold; reason=not-chat"
    assert openai_double.chat_requests == [{"model": "m"}]


def test_oversize_bodies_are_413_declared_or_streamed(proxy: RunningProxy) -> None:
    big = {"model": "m", "messages": [SYSTEM, {"role": "user", "content": "x" * 70_000}]}
    url = f"{proxy.base_url}/chat/completions"
    declared = httpx.post(url, json=big, timeout=5)
    assert declared.status_code == 413
    assert declared.json()["error"]["code"] == "body_too_large"
    assert "64,000 bytes" in declared.json()["error"]["message"]

    def pieces() -> Any:
        data = json.dumps(big).encode()
        for start in range(0, len(data), 8192):
            yield data[start : start + 8192]

    streamed = httpx.post(url, content=pieces(), timeout=5)  # chunked: no Content-Length
    assert streamed.status_code == 413


def test_a_bad_session_header_is_400(proxy: RunningProxy) -> None:
    response = httpx.post(
        f"{proxy.base_url}/chat/completions",
        json={"model": "m", "messages": [TASK]},
        headers={"X-Warmstart-Session": "../../etc/passwd"},
        timeout=5,
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_session_id"


def test_an_unknown_template_fails_at_startup(openai_double: OpenAIDouble, store_url: str) -> None:
    app = create_app(
        ProxySettings(upstream=openai_double.base_url, template="nope", db_url=store_url)
    )
    with pytest.raises(TemplateError, match="no template 'nope'"):
        app.state.proxy.check()


def test_a_template_deleted_while_running_means_cold_not_failure(
    proxy: RunningProxy, openai_double: OpenAIDouble, store_url: str
) -> None:
    Store(store_url).delete_template("airline")
    openai_double.enqueue(text("ok"))
    answer = client(proxy).chat.completions.with_raw_response.create(
        model="double-model",
        messages=[SYSTEM, TASK],  # type: ignore[list-item]
    )
    assert answer.headers["x-warmstart-warm"] == "cold; reason=template-error"
    assert openai_double.chat_requests[0]["messages"] == [SYSTEM, TASK]


def test_a_window_too_small_for_the_history_sends_the_conversation_cold(
    start_proxy: Callable[..., RunningProxy], openai_double: OpenAIDouble, store_url: str
) -> None:
    # 10 % of 600 tokens is smaller than any example: the guard's budget leaves none.
    tiny = start_proxy(
        upstream=openai_double.base_url,
        template="airline",
        db_url=store_url,
        context_length=600,
        min_context=0,
    )
    openai_double.enqueue(text("ok"))
    answer = client(tiny).chat.completions.with_raw_response.create(
        model="double-model",
        messages=[SYSTEM, TASK],  # type: ignore[list-item]
    )
    assert answer.headers["x-warmstart-warm"] == "cold; reason=context"
    assert openai_double.chat_requests[0]["messages"] == [SYSTEM, TASK]


def test_a_window_below_the_minimum_sends_the_conversation_cold(
    start_proxy: Callable[..., RunningProxy], openai_double: OpenAIDouble, store_url: str
) -> None:
    small = start_proxy(
        upstream=openai_double.base_url,
        template="airline",
        db_url=store_url,
        context_length=4096,
        min_context=8192,
    )
    openai_double.enqueue(text("ok"))
    answer = client(small).chat.completions.with_raw_response.create(
        model="double-model",
        messages=[SYSTEM, TASK],  # type: ignore[list-item]
    )
    assert answer.headers["x-warmstart-warm"] == "cold; reason=context"


def test_a_conversation_that_outgrows_the_window_drops_the_prefix(
    start_proxy: Callable[..., RunningProxy], openai_double: OpenAIDouble, store_url: str
) -> None:
    proxy = start_proxy(
        upstream=openai_double.base_url, template="airline", db_url=store_url, context_length=20_000
    )
    openai_double.responder = lambda body: text("ok")
    api = client(proxy)
    first = api.chat.completions.with_raw_response.create(
        model="double-model",
        messages=[SYSTEM, TASK],  # type: ignore[list-item]
    )
    assert first.headers["x-warmstart-warm"].startswith("warm;")
    long_turn = {"role": "user", "content": "word " * 19_000}
    grown = [SYSTEM, TASK, {"role": "assistant", "content": "ok"}, long_turn]
    second = api.chat.completions.with_raw_response.create(
        model="double-model",
        messages=grown,  # type: ignore[arg-type]
    )
    assert second.headers["x-warmstart-warm"] == "cold; reason=context"
    assert openai_double.chat_requests[0]["messages"][1]["content"] == ADDENDUM
    assert openai_double.chat_requests[1]["messages"] == grown
