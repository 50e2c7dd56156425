"""Warm messages in three formats, always validated; the validators catch real faults."""

from __future__ import annotations

import copy
import itertools
import json

import pytest

from warmstart.errors import InjectError
from warmstart.inject import (
    render,
    splice,
    to_anthropic,
    to_openai,
    validate_anthropic,
    validate_openai,
)
from warmstart.model import Example

EXAMPLES = [
    Example("get_user_details", "look me up", '{"user_id": "mia_li_3668"}', '{"name": "Mia"}', 15),
    Example(
        "book_reservation",
        "book it",
        '{"amount": 255}',
        '{"reservation_id": "ZFA04Y"}',
        900,
        failed_arguments='{"amount": 250}',
        failed_result="Error: payment amount does not add up",
    ),
]


def test_openai_shape_ids_and_truncation_note() -> None:
    msgs = to_openai(EXAMPLES)
    assert [m["role"] for m in msgs] == [
        "system",
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    ids = [m["tool_calls"][0]["id"] for m in msgs if m["role"] == "assistant"]
    assert len(set(ids)) == 3
    assert msgs[6]["content"] == "Error: payment amount does not add up"
    assert msgs[8]["content"].endswith("[truncated: 900 characters in full]")
    validate_openai(msgs)


def test_anthropic_blocks_alternate_and_pair() -> None:
    out = to_anthropic(EXAMPLES)
    roles = [m["role"] for m in out["messages"]]
    assert all(a != b for a, b in itertools.pairwise(roles))
    uses = [b for m in out["messages"] for b in m["content"] if b["type"] == "tool_use"]
    results = [b for m in out["messages"] for b in m["content"] if b["type"] == "tool_result"]
    assert [u["id"] for u in uses] == [r["tool_use_id"] for r in results]
    assert uses[1]["input"] == {"amount": 250} and results[1]["is_error"] is True
    validate_anthropic(out["messages"])


def test_hermes_prefill_has_no_system_message() -> None:
    out = render(EXAMPLES, "hermes")
    assert out[0]["role"] == "user"
    json.dumps(out)


@pytest.mark.parametrize(
    ("mutate", "problem"),
    [
        (lambda m: m.pop(3), "unanswered"),
        (lambda m: m[5]["tool_calls"][0].update(id="call_warm_1"), "duplicate tool call id"),
        (lambda m: m[2]["tool_calls"][0]["function"].update(arguments="{x"), "not valid JSON"),
        (lambda m: m[3].update(tool_call_id="nope"), "unknown or answered id"),
    ],
)
def test_openai_validator_catches_faults(mutate: object, problem: str) -> None:
    msgs = copy.deepcopy(to_openai(EXAMPLES))
    mutate(msgs)  # type: ignore[operator]
    with pytest.raises(InjectError, match=problem):
        validate_openai(msgs)


def test_anthropic_validator_catches_unanswered_use() -> None:
    out = to_anthropic(EXAMPLES)
    out["messages"][-1]["content"] = [{"type": "text", "text": "oops"}]
    with pytest.raises(InjectError, match="never answered"):
        validate_anthropic(out["messages"])


def test_splice_after_leading_system_messages() -> None:
    warm = to_openai(EXAMPLES[:1], addendum=None)
    convo = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]
    out = splice(warm, convo)
    assert out[0] == convo[0] and out[-1] == convo[1] and out[1:-1] == warm


def test_unknown_format() -> None:
    with pytest.raises(InjectError, match="unknown format"):
        render(EXAMPLES, "yaml")
