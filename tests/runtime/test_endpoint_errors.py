"""Endpoint failures are data: retries only where the server says when, never a crash."""

from __future__ import annotations

import time
from typing import Any

from tests.support.openai_double import OpenAIDouble, drop, http_error, raw, text

from warmstart.runtime import Runtime, ToolRegistry
from warmstart.runtime.loop import retry_after


def make(base_url: str, **options: Any) -> Runtime:
    options.setdefault("context_length", 100_000)
    return Runtime(ToolRegistry(), model="double-model", base_url=base_url, **options)


def test_429_with_retry_after_is_retried(openai_double: OpenAIDouble) -> None:
    openai_double.enqueue(
        http_error(429, "slow down", headers={"Retry-After": "0.2"}),
        text("finally"),
    )
    started = time.monotonic()
    result = make(openai_double.base_url).run("hi")

    assert time.monotonic() - started >= 0.2
    assert result.stop_reason == "final_answer"
    assert result.final_answer == "finally"
    assert len(openai_double.chat_requests) == 2
    error = result.errors[0]
    assert (error.kind, error.status, error.retried) == ("rate_limited", 429, True)
    assert "slow down" in error.message


def test_503_with_retry_after_ms_is_retried(openai_double: OpenAIDouble) -> None:
    openai_double.enqueue(http_error(503, headers={"retry-after-ms": "50"}), text("up again"))
    result = make(openai_double.base_url).run("hi")
    assert result.final_answer == "up again"
    assert result.errors[0].status == 503


def test_429_without_retry_after_is_not_retried(openai_double: OpenAIDouble) -> None:
    openai_double.enqueue(http_error(429), text("never sent"))
    result = make(openai_double.base_url).run("hi")
    assert result.stop_reason == "endpoint_error"
    assert len(openai_double.chat_requests) == 1
    assert result.errors[0].retried is False


def test_retries_are_bounded(openai_double: OpenAIDouble) -> None:
    busy = http_error(429, headers={"Retry-After": "0.01"})
    openai_double.enqueue(busy, busy, busy, text("too late"))
    result = make(openai_double.base_url, max_retries=2).run("hi")
    assert result.stop_reason == "endpoint_error"
    assert len(openai_double.chat_requests) == 3
    assert [e.retried for e in result.errors] == [True, True, False]


def test_retry_after_beyond_the_limit_is_not_waited(openai_double: OpenAIDouble) -> None:
    openai_double.enqueue(http_error(429, headers={"Retry-After": "3600"}), text("x"))
    started = time.monotonic()
    result = make(openai_double.base_url, max_retry_wait=5).run("hi")
    assert time.monotonic() - started < 2
    assert result.stop_reason == "endpoint_error"
    assert len(openai_double.chat_requests) == 1


def test_5xx_is_recorded_as_data(openai_double: OpenAIDouble) -> None:
    openai_double.enqueue(http_error(500, "upstream exploded"), text("never"))
    result = make(openai_double.base_url).run("hi")

    assert result.stop_reason == "endpoint_error"
    assert len(openai_double.chat_requests) == 1  # 500 without Retry-After: no retry
    error = result.errors[0]
    assert (error.kind, error.status, error.turn) == ("http_status", 500, 1)
    assert "upstream exploded" in error.message
    assert result.to_session().end_reason == "error"


def test_endpoint_down(closed_base_url: str) -> None:
    started = time.monotonic()
    result = make(closed_base_url).run("hi")
    assert time.monotonic() - started < 5
    assert result.stop_reason == "endpoint_error"
    assert result.errors[0].kind == "connection"
    assert result.turns == 0


def test_request_timeout(openai_double: OpenAIDouble) -> None:
    openai_double.enqueue(text("late", delay=2.0))
    result = make(openai_double.base_url, request_timeout=0.3).run("hi")
    assert result.stop_reason == "endpoint_error"
    assert result.errors[0].kind == "timeout"


def test_dropped_connection(openai_double: OpenAIDouble) -> None:
    openai_double.enqueue(drop())
    result = make(openai_double.base_url).run("hi")
    assert result.stop_reason == "endpoint_error"
    assert result.errors[0].kind == "connection"


def test_body_that_is_not_json(openai_double: OpenAIDouble) -> None:
    openai_double.enqueue(raw("<html>gateway</html>", headers={"Content-Type": "text/html"}))
    result = make(openai_double.base_url).run("hi")
    assert result.stop_reason == "bad_response"
    assert result.errors[0].kind == "bad_response"


def test_json_that_is_not_a_completion(openai_double: OpenAIDouble) -> None:
    openai_double.enqueue(raw({"unexpected": True}))
    result = make(openai_double.base_url).run("hi")
    assert result.stop_reason == "bad_response"
    assert "not a chat completion" in result.errors[0].message


def test_unauthorised_is_an_endpoint_error() -> None:
    with OpenAIDouble(api_key="sk-right") as double:
        result = make(double.base_url, api_key="sk-wrong").run("hi")
    assert result.stop_reason == "endpoint_error"
    assert result.errors[0].status == 401


def test_retry_after_parsing() -> None:
    assert retry_after({"Retry-After": "2"}) == 2.0
    assert retry_after({"retry-after-ms": "250"}) == 0.25
    assert retry_after({"Retry-After": "-3"}) == 0.0
    assert retry_after({}) is None
    assert retry_after({"Retry-After": "soon"}) is None
    future = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    delay = retry_after({"Retry-After": future})
    assert delay is not None and 25 < delay <= 31
