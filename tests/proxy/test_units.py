"""The proxy's pieces on their own: conversation ids, arms, stream assembly, the window
check, settings, and the planner's choices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from warmstart.proxy import ProxySettings
from warmstart.proxy.conversation import (
    BadSessionId,
    Conversation,
    Conversations,
    assign_arm,
    is_new_conversation,
    session_id_for,
)
from warmstart.proxy.recorder import StreamAssembler, Writer, to_message
from warmstart.proxy.warm import WarmPlan, WarmPlanner, cold, fits, task_text, tool_names

SYSTEM = {"role": "system", "content": "be brief"}


def test_the_id_hashes_the_first_messages_and_survives_growth() -> None:
    first = [SYSTEM, {"role": "user", "content": "change my flight"}]
    grown = [*first, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "go"}]
    other = [SYSTEM, {"role": "user", "content": "cancel my flight"}]
    assert session_id_for(first) == session_id_for(grown)
    assert session_id_for(first) != session_id_for(other)
    assert session_id_for(first).startswith("h-") and len(session_id_for(first)) == 26
    assert session_id_for(first, "my-session:1") == "my-session:1"


@pytest.mark.parametrize("header", ["", "../x", "a b", "x" * 201, "-leading"])
def test_bad_session_headers_are_refused(header: str) -> None:
    with pytest.raises(BadSessionId):
        session_id_for([SYSTEM], header)


def test_arms_are_deterministic_and_follow_the_share() -> None:
    ids = [f"session-{n}" for n in range(4000)]
    warm = [assign_arm(i, 0.3) for i in ids].count("warm")
    assert 0.27 < warm / len(ids) < 0.33
    assert [assign_arm(i, 0.3) for i in ids[:50]] == [assign_arm(i, 0.3) for i in ids[:50]]
    assert {assign_arm(i, 0.0) for i in ids[:200]} == {"cold"}
    assert {assign_arm(i, 1.0) for i in ids[:200]} == {"warm"}


def test_a_conversation_is_new_until_an_assistant_speaks() -> None:
    assert is_new_conversation([SYSTEM, {"role": "user", "content": "x"}])
    assert not is_new_conversation([{"role": "assistant", "content": "x"}])


def test_the_conversation_map_forgets_the_least_recently_used() -> None:
    convs = Conversations(limit=2)
    for name in ("a", "b"):
        convs.put(Conversation(name, cold("no-template")))
    assert convs.get("a") is not None  # "a" is now the most recent
    convs.put(Conversation("c", cold("no-template")))
    assert convs.get("b") is None and convs.get("a") is not None and len(convs) == 2
    first = convs.get("a")
    assert convs.put(Conversation("a", cold("ab"))) is first, "the first plan wins"


def _stream_bytes() -> bytes:
    events = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
        {"choices": [{"index": 0, "delta": {"content": "Checking "}}]},
        {"choices": [{"index": 0, "delta": {"content": "now."}}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "function": {"name": "get_user", "arguments": ""},
                            }
                        ]
                    },
                }
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"id":'}}]},
                }
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '"a"}'}}]},
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3}},
    ]
    text = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    return text.encode()


@given(st.lists(st.integers(min_value=1, max_value=64), min_size=1, max_size=40))
def test_the_stream_assembler_rebuilds_the_message_however_bytes_are_split(
    cuts: list[int],
) -> None:
    data = _stream_bytes()
    assembler = StreamAssembler()
    at = 0
    for size in cuts:
        assembler.feed(data[at : at + size])
        at += size
    assembler.feed(data[at:])
    assert assembler.message() == {
        "role": "assistant",
        "content": "Checking now.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_user", "arguments": '{"id":"a"}'},
            }
        ],
    }
    assert assembler.finish_reason == "tool_calls"
    assert assembler.usage == {"prompt_tokens": 12, "completion_tokens": 3}


def test_an_empty_or_foreign_stream_gives_no_message() -> None:
    assembler = StreamAssembler()
    assembler.feed(b": keep-alive\n\ndata: not json\n\n")
    assert assembler.message() is None


def test_messages_convert_for_the_store() -> None:
    converted = to_message(
        {
            "role": "developer",
            "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {}}],
        }
    )
    assert converted is not None and (converted.role, converted.content) == ("system", "a")
    call = to_message(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {"x": 1}}}],
        }
    )
    assert call is not None and call.tool_calls[0].arguments == '{"x": 1}'
    assert to_message({"role": "narrator", "content": "x"}) is None
    assert to_message("not a message") is None


def test_the_writer_coalesces_jobs_per_key_and_flushes() -> None:
    writer = Writer()
    seen: list[int] = []
    block = __import__("threading").Event()
    writer.submit(block.wait)  # hold the thread so the next jobs queue up
    for n in range(5):
        writer.submit(lambda n=n: seen.append(n), key="conversation")
    block.set()
    assert writer.flush(5)
    assert seen == [4], "only the newest pending job of a key runs"
    writer.submit(lambda: 1 / 0)  # a failing job is logged, the writer lives on
    writer.submit(lambda: seen.append(9))
    assert writer.close(5) and seen == [4, 9]


def test_the_window_check_counts_only_near_the_limit() -> None:
    plan = WarmPlan(messages=({"role": "system", "content": "x"},), tokens=500, window=2000)
    small = [{"role": "user", "content": "hi"}]
    assert fits(plan, small, body_size=100)
    big = [{"role": "user", "content": "word " * 1600}]
    assert not fits(plan, big, body_size=8000)
    assert fits(plan, [{"role": "user", "content": "word " * 100}], body_size=5000)
    assert not fits(plan, small, body_size=100, reserve=1500)
    assert fits(cold("ab"), big, body_size=10**9), "a cold plan has nothing to drop"


def test_plan_headers_say_what_happened() -> None:
    plan = WarmPlan(
        messages=({"role": "system", "content": "x"},),
        template="airline",
        version=3,
        examples=4,
        tokens=321,
    )
    assert plan.header() == "warm; template=airline; version=3; examples=4; tokens=321"
    assert plan.cold("context").header() == "cold; reason=context"
    assert cold("ab").header() == "cold; reason=ab"


def test_task_text_and_tool_names_read_requests() -> None:
    messages = [SYSTEM, {"role": "user", "content": [{"type": "text", "text": "hello"}]}]
    assert task_text(messages) == "hello"
    assert task_text([SYSTEM]) is None
    tools = [{"type": "function", "function": {"name": "a"}}, {"name": "legacy"}, "junk"]
    assert tool_names(tools) == ["a", "legacy"]


def test_settings_validate_the_options() -> None:
    assert ProxySettings(upstream="http://h:1/v1/").upstream == "http://h:1/v1"
    with pytest.raises(ValidationError, match="http"):
        ProxySettings(upstream="ftp://h/v1")
    with pytest.raises(ValidationError, match="either a template or auto"):
        ProxySettings(upstream="http://h/v1", template="a", auto=True)
    with pytest.raises(ValidationError):
        ProxySettings(upstream="http://h/v1", ab=1.5)
    with pytest.raises(ValidationError, match="must not contain"):
        ProxySettings(upstream="http://h/v1", template="../etc")


def test_the_planner_plans_within_the_guard_budget(
    tmp_path_factory: pytest.TempPathFactory, tau_sample: Path, tmp_path: Path
) -> None:
    from tests.proxy.stores import airline_store, private_copy

    url = private_copy(airline_store(tmp_path_factory, tau_sample), tmp_path)
    planner = WarmPlanner(url, template="airline", context_length=10_000)
    plan = planner.plan("change my flight", (), "any-model")
    assert plan.warm and plan.template == "airline" and plan.window == 10_000
    assert plan.tokens <= 1_000, "10 % of the window"
    assert plan.messages[0]["role"] == "system"
    again = planner.plan("change my flight", (), "any-model")
    assert again.messages == plan.messages, "plans are deterministic"
    assert WarmPlanner(url).plan("x", (), "m").reason == "no-template"
    auto = WarmPlanner(url, auto=True, context_length=10_000)
    assert auto.plan("change my flight", ["get_user_details"], "m").template == "airline"
    assert auto.plan("list files", ["read_file"], "m").reason == "no-template"


def test_the_body_with_a_prefix_equals_the_spliced_conversation() -> None:
    from warmstart.inject import splice
    from warmstart.proxy.app import _MARK, encode_with_prefix

    warm = ({"role": "system", "content": "note"}, {"role": "user", "content": "ex ü"})
    plan = WarmPlan(messages=warm, fragment=json.dumps(list(warm), ensure_ascii=False)[1:-1])
    for messages in (
        [SYSTEM, {"role": "user", "content": "hi"}],
        [{"role": "user", "content": "no system"}],
        [SYSTEM, {"role": "developer", "content": "dev"}],
        ["junk", {"role": "user", "content": "x"}],
    ):
        data = {"model": "m", "messages": messages, "tools": [{"name": "t"}], "n": 1}
        body = json.loads(encode_with_prefix(data, messages, plan))
        head = [m for m in messages[:2] if isinstance(m, dict) and m["role"] != "user"]
        expected = [*head, *warm, *messages[len(head) :]]
        assert body == {**data, "messages": expected}
        assert data["messages"] is messages, "the client's data is left as it was"
        if all(isinstance(m, dict) for m in messages):
            assert body["messages"] == splice(list(warm), messages)
    tricky = {"model": _MARK, "messages": [SYSTEM]}
    body = json.loads(encode_with_prefix(tricky, [SYSTEM], plan))
    assert body == {"model": _MARK, "messages": [SYSTEM, *warm]}
