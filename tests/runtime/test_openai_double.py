"""The OpenAI double itself, driven by the real ``openai`` client (others rely on it)."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI
from tests.support.openai_double import (
    OpenAIDouble,
    call,
    http_error,
    text,
    tool_calls,
)


def client(double: OpenAIDouble, **options: Any) -> OpenAI:
    return OpenAI(base_url=double.base_url, api_key="sk-test", max_retries=0, **options)


def test_non_streaming_text_and_record(openai_double: OpenAIDouble) -> None:
    openai_double.enqueue("hello there")
    reply = client(openai_double).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.choices[0].message.content == "hello there"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.model == "m"
    assert reply.usage is not None and reply.usage.total_tokens > 0
    request = openai_double.requests[0]
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.json["messages"] == [{"role": "user", "content": "hi"}]
    assert openai_double.pending == 0


def test_non_streaming_tool_calls(openai_double: OpenAIDouble) -> None:
    openai_double.enqueue(tool_calls(call("get", {"id": 1}, id="x"), call("put", '{"bad')))
    message = (
        client(openai_double)
        .chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}])
        .choices[0]
        .message
    )
    assert message.tool_calls is not None
    assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls] == [  # type: ignore[union-attr]
        ("x", "get", '{"id": 1}'),
        (message.tool_calls[1].id, "put", '{"bad'),
    ]


def test_streaming_text_and_tool_calls(openai_double: OpenAIDouble) -> None:
    openai_double.enqueue(
        tool_calls(call("lookup", {"query": "weather in Paris"}, id="s1"), content="Let me check.")
    )
    stream = client(openai_double).chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "weather?"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    content, name, arguments, finish, usage = "", "", "", None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for delta in choice.delta.tool_calls or ():
                name += (delta.function and delta.function.name) or ""
                arguments += (delta.function and delta.function.arguments) or ""
            finish = choice.finish_reason or finish
    assert content == "Let me check."
    assert (name, arguments) == ("lookup", '{"query": "weather in Paris"}')
    assert finish == "tool_calls"
    assert usage is not None and usage.completion_tokens > 0


def test_streaming_wire_format(openai_double: OpenAIDouble) -> None:
    openai_double.enqueue(text("abc"))
    response = httpx.post(
        f"{openai_double.base_url}/chat/completions",
        json={"model": "m", "messages": [], "stream": True},
    )
    assert response.headers["content-type"] == "text/event-stream"
    events = [line for line in response.text.split("\n\n") if line]
    assert all(event.startswith("data: ") for event in events)
    assert events[-1] == "data: [DONE]"


def test_responder_sees_the_request(openai_double: OpenAIDouble) -> None:
    def respond(request: dict[str, Any]) -> str:
        return f"{len(request['messages'])} messages"

    openai_double.responder = respond
    llm = client(openai_double)
    first = llm.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
    second = llm.chat.completions.create(
        model="m",
        messages=[{"role": "system", "content": "s"}, {"role": "user", "content": "a"}],
    )
    assert first.choices[0].message.content == "1 messages"
    assert second.choices[0].message.content == "2 messages"


def test_queue_before_responder_and_exhaustion(openai_double: OpenAIDouble) -> None:
    openai_double.enqueue("queued")
    llm = client(openai_double)
    assert (
        llm.chat.completions.create(model="m", messages=[]).choices[0].message.content == "queued"
    )
    with pytest.raises(openai.InternalServerError, match="script exhausted"):
        llm.chat.completions.create(model="m", messages=[])


def test_responder_errors_are_surfaced(openai_double: OpenAIDouble) -> None:
    def broken(request: dict[str, Any]) -> str:
        raise KeyError("oops")

    openai_double.responder = broken
    with pytest.raises(openai.InternalServerError):
        client(openai_double).chat.completions.create(model="m", messages=[])
    assert isinstance(openai_double.errors[0], KeyError)


def test_error_status_headers_and_body(openai_double: OpenAIDouble) -> None:
    openai_double.enqueue(http_error(429, "busy", headers={"Retry-After": "7"}))
    with pytest.raises(openai.RateLimitError) as caught:
        client(openai_double).chat.completions.create(model="m", messages=[])
    assert caught.value.response.headers["retry-after"] == "7"
    assert "busy" in str(caught.value)


def test_models_listing_passes_extra_keys() -> None:
    with OpenAIDouble(models=[{"id": "a", "max_model_len": 2048}]) as double:
        models = client(double).models.list()
        entry = models.data[0]
        assert entry.id == "a"
        assert entry.model_extra is not None and entry.model_extra["max_model_len"] == 2048


def test_probe_routes_are_404_unless_configured(openai_double: OpenAIDouble) -> None:
    assert httpx.post(f"{openai_double.url}/api/show", json={"model": "m"}).status_code == 404
    assert httpx.get(f"{openai_double.url}/props").status_code == 404
    openai_double.props = {"n_ctx": 1}
    assert httpx.get(f"{openai_double.url}/props").json() == {"n_ctx": 1}


def test_api_key_enforced() -> None:
    with OpenAIDouble(api_key="sk-good") as double:
        with pytest.raises(openai.AuthenticationError):
            OpenAI(base_url=double.base_url, api_key="sk-bad", max_retries=0).models.list()
        double.enqueue("ok")
        reply = OpenAI(base_url=double.base_url, api_key="sk-good").chat.completions.create(
            model="m", messages=[]
        )
        assert reply.choices[0].message.content == "ok"


def test_delay_and_clear(openai_double: OpenAIDouble) -> None:
    openai_double.enqueue(text("slow", delay=1.0))
    with pytest.raises(openai.APITimeoutError):
        client(openai_double, timeout=0.2).chat.completions.create(model="m", messages=[])
    openai_double.clear()
    assert openai_double.requests == [] and openai_double.pending == 0
