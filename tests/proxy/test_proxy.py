"""The proxy between the official ``openai`` client and the OpenAI double: warm prefixes,
streaming, tool calls, recording, A/B arms and credentials."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai import OpenAI
from tests.proxy.conftest import RunningProxy
from tests.support.openai_double import OpenAIDouble, call, text, tool_calls

from warmstart.inject import ADDENDUM, validate_openai
from warmstart.proxy.conversation import assign_arm
from warmstart.store import SessionFilter, Store

SYSTEM = {"role": "system", "content": "You are an airline agent. Be brief."}
TASK = {"role": "user", "content": "I want to change the flight on my reservation"}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_reservation_details",
            "description": "Look up a reservation.",
            "parameters": {
                "type": "object",
                "properties": {"reservation_id": {"type": "string"}},
                "required": ["reservation_id"],
            },
        },
    }
]


def client(proxy: RunningProxy, key: str = "sk-test") -> OpenAI:
    return OpenAI(base_url=proxy.base_url, api_key=key, max_retries=0, timeout=20)


def warm_proxy(
    start_proxy: Callable[..., RunningProxy], double: OpenAIDouble, store_url: str, **extra: Any
) -> RunningProxy:
    values: dict[str, Any] = {
        "upstream": double.base_url,
        "template": "airline",
        "db_url": store_url,
        "context_length": 128_000,
    }
    values.update(extra)
    return start_proxy(**values)


def split_warm(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(warm prefix, the client's own messages) of an upstream request."""
    assert messages[0] == SYSTEM
    assert messages[1] == {"role": "system", "content": ADDENDUM}
    end = messages.index(TASK)
    return messages[1:end], [messages[0], *messages[end:]]


def test_a_new_conversation_gets_the_warm_prefix_upstream_and_never_downstream(
    start_proxy: Callable[..., RunningProxy], openai_double: OpenAIDouble, store_url: str
) -> None:
    proxy = warm_proxy(start_proxy, openai_double, store_url)
    openai_double.enqueue(text("Sure, which reservation?"))
    raw = client(proxy).chat.completions.with_raw_response.create(
        model="double-model",
        messages=[SYSTEM, TASK],  # type: ignore[list-item]
        tools=TOOLS,  # type: ignore[list-item]
        temperature=0.2,
        tool_choice="auto",
    )
    answer = raw.parse()
    assert answer.choices[0].message.content == "Sure, which reservation?"
    assert raw.headers["x-warmstart-warm"].startswith("warm; template=airline; version=1;")
    assert raw.headers["x-warmstart-session"].startswith("h-")

    sent = openai_double.chat_requests[0]
    warm, own = split_warm(sent["messages"])
    assert own == [SYSTEM, TASK]
    assert any(m.get("tool_calls") for m in warm)
    validate_openai(sent["messages"])
    # the client's tools and settings go through untouched
    assert sent["tools"] == TOOLS
    assert (sent["temperature"], sent["tool_choice"], sent["model"]) == (
        0.2,
        "auto",
        "double-model",
    )
    # nothing of the warm history comes back to the client
    body = raw.http_response.text
    assert ADDENDUM not in body and "call_warm_" not in body


def test_later_requests_of_a_conversation_carry_the_same_prefix_bytes(
    start_proxy: Callable[..., RunningProxy], openai_double: OpenAIDouble, store_url: str
) -> None:
    proxy = warm_proxy(start_proxy, openai_double, store_url)
    openai_double.enqueue(text("Which reservation?"), text("Done."))
    api = client(proxy)
    api.chat.completions.create(model="double-model", messages=[SYSTEM, TASK])  # type: ignore[list-item]
    second = [
        SYSTEM,
        TASK,
        {"role": "assistant", "content": "Which reservation?"},
        {"role": "user", "content": "It is ZFA04Y"},
    ]
    api.chat.completions.create(model="double-model", messages=second)  # type: ignore[arg-type]

    first_warm, _ = split_warm(openai_double.chat_requests[0]["messages"])
    second_warm, own = split_warm(openai_double.chat_requests[1]["messages"])
    assert second_warm == first_warm and own == second
    encoded = json.dumps(first_warm, ensure_ascii=False, separators=(",", ":"))[1:-1].encode()
    bodies = [r.body for r in openai_double.requests_to("/v1/chat/completions")]
    assert all(encoded in body for body in bodies), "the prefix must be byte-identical"


def test_streaming_is_relayed_event_by_event_with_the_prefix_upstream(
    start_proxy: Callable[..., RunningProxy], openai_double: OpenAIDouble, store_url: str
) -> None:
    proxy = warm_proxy(start_proxy, openai_double, store_url)
    openai_double.enqueue(text("Let me check that reservation for you."))
    stream = client(proxy).chat.completions.create(
        model="double-model",
        messages=[SYSTEM, TASK],  # type: ignore[list-item]
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    pieces = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert "".join(pieces) == "Let me check that reservation for you."
    assert len(pieces) == 3, "the double sends three content events; each must arrive"
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens > 0
    warm, own = split_warm(openai_double.chat_requests[0]["messages"])
    assert warm and own == [SYSTEM, TASK]


def test_tool_calls_round_trip_plain_and_streamed(
    start_proxy: Callable[..., RunningProxy], openai_double: OpenAIDouble, store_url: str
) -> None:
    proxy = warm_proxy(start_proxy, openai_double, store_url, record=True)
    openai_double.enqueue(
        tool_calls(call("get_reservation_details", {"reservation_id": "ZFA04Y"}, id="call_a")),
        tool_calls(call("get_reservation_details", {"reservation_id": "XYZ"}, id="call_b")),
        text("Your flight is HAT001."),
    )
    api = client(proxy)
    first = api.chat.completions.create(
        model="double-model",
        messages=[SYSTEM, TASK],  # type: ignore[list-item]
        tools=TOOLS,  # type: ignore[list-item]
    )
    made = first.choices[0].message.tool_calls
    assert made is not None and made[0].function.name == "get_reservation_details"
    assert json.loads(made[0].function.arguments) == {"reservation_id": "ZFA04Y"}
    history: list[dict[str, Any]] = [
        SYSTEM,
        TASK,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": "call_a", "content": '{"flights": []}'},
    ]
    streamed = api.chat.completions.create(
        model="double-model",
        messages=history,  # type: ignore[arg-type]
        tools=TOOLS,  # type: ignore[list-item]
        stream=True,
    )
    deltas = [
        tc for chunk in streamed if chunk.choices for tc in chunk.choices[0].delta.tool_calls or ()
    ]
    assert deltas[0].id == "call_b" and deltas[0].function is not None
    assert "".join(d.function.arguments or "" for d in deltas if d.function) == (
        '{"reservation_id": "XYZ"}'
    )
    history += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {
                        "name": "get_reservation_details",
                        "arguments": '{"reservation_id": "XYZ"}',
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_b", "content": "Error: reservation not found"},
    ]
    done = api.chat.completions.create(model="double-model", messages=history, tools=TOOLS)  # type: ignore[arg-type]
    assert done.choices[0].message.content == "Your flight is HAT001."
    third = openai_double.chat_requests[2]["messages"]
    _warm, own = split_warm(third)
    assert own == history
    validate_openai(third)

    proxy.flush()
    session = Store(store_url).get_session("proxy:" + _session_id(openai_double))
    # the stored conversation is the client's: no warm message, the final answer included
    assert [m["role"] for m in session["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert session["messages"][-1]["content"] == "Your flight is HAT001."
    assert [(c["tool"], c["ok"]) for c in session["calls"]] == [
        ("get_reservation_details", True),
        ("get_reservation_details", False),
    ]
    assert session["tools"] == ["get_reservation_details"]
    assert session["metadata"]["requests"] == 3 and session["metadata"]["warm"] is True
    assert "arm" not in session["metadata"], "no A/B test, no arm"


def proxy_sessions(store_url: str) -> list[dict[str, Any]]:
    return Store(store_url).list_sessions(SessionFilter(source="proxy"))


def _session_id(double: OpenAIDouble) -> str:
    from warmstart.proxy.conversation import session_id_for

    return session_id_for([SYSTEM, TASK])


def test_recording_with_arms_splits_conversations_deterministically(
    start_proxy: Callable[..., RunningProxy], openai_double: OpenAIDouble, store_url: str
) -> None:
    proxy = warm_proxy(start_proxy, openai_double, store_url, record=True, ab=0.5)
    ids = [f"conv-{n}" for n in range(40)]
    arms = {sid: assign_arm(sid, 0.5) for sid in ids}
    chosen = [next(s for s in ids if arms[s] == "warm"), next(s for s in ids if arms[s] == "cold")]
    openai_double.responder = lambda body: text("ok")
    api = client(proxy)
    headers: dict[str, dict[str, str]] = {}
    for sid in chosen:
        raw = api.chat.completions.with_raw_response.create(
            model="double-model",
            messages=[SYSTEM, TASK],  # type: ignore[list-item]
            extra_headers={"X-Warmstart-Session": sid},
        )
        headers[sid] = dict(raw.headers)
    warm_sid, cold_sid = chosen
    assert headers[warm_sid]["x-warmstart-arm"] == "warm"
    assert headers[warm_sid]["x-warmstart-warm"].startswith("warm; template=airline")
    assert headers[cold_sid]["x-warmstart-arm"] == "cold"
    assert headers[cold_sid]["x-warmstart-warm"] == "cold; reason=ab"
    upstream = openai_double.chat_requests
    assert upstream[0]["messages"][1] == {"role": "system", "content": ADDENDUM}
    assert upstream[1]["messages"] == [SYSTEM, TASK], "the cold arm is sent as the client wrote it"
    # the session header is ours: it does not travel upstream
    assert all(
        "x-warmstart-session" not in r.headers
        for r in openai_double.requests_to("/v1/chat/completions")
    )

    proxy.flush()
    stored = {
        s["external_id"]: s for s in Store(store_url).list_sessions(SessionFilter(source="proxy"))
    }
    assert set(stored) == {warm_sid, cold_sid}
    assert stored[warm_sid]["metadata"]["arm"] == "warm" and stored[warm_sid]["metadata"]["warm"]
    assert stored[cold_sid]["metadata"]["arm"] == "cold"
    assert stored[cold_sid]["metadata"]["cold_reason"] == "ab"
    assert stored[cold_sid]["metadata"]["warm"] is False
    assert stored[warm_sid]["n_messages"] == 3  # system, user, answer


def test_conversations_without_a_header_are_told_apart_by_their_first_messages(
    start_proxy: Callable[..., RunningProxy], openai_double: OpenAIDouble, store_url: str
) -> None:
    proxy = warm_proxy(start_proxy, openai_double, store_url, record=True)
    openai_double.responder = lambda body: text("ok")
    api = client(proxy)
    other = {"role": "user", "content": "Please cancel my reservation"}
    ids = []
    for messages in (
        [SYSTEM, TASK],
        [SYSTEM, other],
        [SYSTEM, TASK, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "go"}],
    ):
        raw = api.chat.completions.with_raw_response.create(model="double-model", messages=messages)  # type: ignore[arg-type]
        ids.append(raw.headers["x-warmstart-session"])
    assert ids[0] == ids[2] != ids[1]
    proxy.flush()
    stored = {
        s["external_id"]: s for s in Store(store_url).list_sessions(SessionFilter(source="proxy"))
    }
    assert set(stored) == {ids[0], ids[1]}
    assert stored[ids[0]]["n_messages"] == 5 and stored[ids[0]]["metadata"]["requests"] == 2


def test_upstream_credentials_pass_through_and_are_never_logged_or_stored(
    start_proxy: Callable[..., RunningProxy],
    store_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "sk-upstream-secret-4b1d2c9e"
    with OpenAIDouble(api_key=secret) as double:
        proxy = warm_proxy(start_proxy, double, store_url, record=True)
        double.enqueue(text("hello"))
        caplog.set_level(logging.DEBUG)
        answer = client(proxy, key=secret).chat.completions.create(
            model="double-model",
            messages=[SYSTEM, TASK],  # type: ignore[list-item]
            extra_headers={"OpenAI-Organization": "org-test"},
        )
        assert answer.choices[0].message.content == "hello"
        sent = double.requests_to("/v1/chat/completions")[0].headers
        assert sent["authorization"] == f"Bearer {secret}"
        assert sent["openai-organization"] == "org-test"
        # a wrong key is the upstream's to refuse, and the refusal comes back as is
        with pytest.raises(Exception) as refused:
            client(proxy, key="sk-wrong").chat.completions.create(
                model="double-model",
                messages=[SYSTEM, TASK],  # type: ignore[list-item]
            )
        assert getattr(refused.value, "status_code", None) == 401
        proxy.flush()
    database = Path(store_url.removeprefix("sqlite:///"))
    stored = b"".join(p.read_bytes() for p in database.parent.glob("store.db*"))
    assert b"sk-upstream-secret" not in stored and b"sk-wrong" not in stored
    assert len(Store(store_url).list_sessions(SessionFilter(source="proxy"))) == 1
    assert secret not in caplog.text


def test_models_and_other_v1_paths_pass_through(
    start_proxy: Callable[..., RunningProxy], store_url: str
) -> None:
    models = [{"id": "double-model", "max_model_len": 32768}, {"id": "other"}]
    with OpenAIDouble(models=models) as double:
        proxy = warm_proxy(start_proxy, double, store_url)
        listed = client(proxy).models.list()
        assert [m.id for m in listed.data] == ["double-model", "other"]
        response = httpx.post(f"{proxy.base_url}/embeddings?dim=8", json={"input": "x"})
        assert response.status_code == 404
        assert response.json()["error"]["message"] == "no route for POST /v1/embeddings"
        assert double.requests[-1].path == "/v1/embeddings?dim=8"
        outside = httpx.get(f"{proxy.url}/health")
        assert outside.status_code == 404 and outside.json()["error"]["code"] == "not_found"


def test_auto_picks_a_template_only_when_the_client_has_its_tools(
    start_proxy: Callable[..., RunningProxy], openai_double: OpenAIDouble, store_url: str
) -> None:
    proxy = warm_proxy(start_proxy, openai_double, store_url, template=None, auto=True)
    openai_double.responder = lambda body: text("ok")
    api = client(proxy)
    raw = api.chat.completions.with_raw_response.create(
        model="double-model",
        messages=[SYSTEM, TASK],
        tools=TOOLS,  # type: ignore[list-item]
    )
    assert raw.headers["x-warmstart-warm"].startswith("warm; template=airline")
    unrelated = [
        {
            "type": "function",
            "function": {"name": "read_file", "parameters": {"type": "object", "properties": {}}},
        }
    ]
    raw = api.chat.completions.with_raw_response.create(
        model="double-model",
        messages=[SYSTEM, {"role": "user", "content": "Summarise README.md"}],
        tools=unrelated,  # type: ignore[list-item]
    )
    assert raw.headers["x-warmstart-warm"] == "cold; reason=no-template"
    assert openai_double.chat_requests[1]["messages"][1]["role"] == "user"


def test_without_a_template_the_proxy_relays_and_records_cold(
    start_proxy: Callable[..., RunningProxy], openai_double: OpenAIDouble, store_url: str
) -> None:
    proxy = start_proxy(upstream=openai_double.base_url, db_url=store_url, record=True)
    openai_double.enqueue(text("ok"))
    raw = client(proxy).chat.completions.with_raw_response.create(
        model="double-model",
        messages=[SYSTEM, TASK],  # type: ignore[list-item]
    )
    assert raw.headers["x-warmstart-warm"] == "cold; reason=no-template"
    assert openai_double.chat_requests[0]["messages"] == [SYSTEM, TASK]
    proxy.flush()
    (session,) = Store(store_url).list_sessions(SessionFilter(source="proxy"))
    assert session["metadata"]["cold_reason"] == "no-template"
