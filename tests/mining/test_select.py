"""Selection: budget, tool coverage, failing tools, recovery pairs, duplicates, relevance."""

from __future__ import annotations

import json

from warmstart.mining.examples import example_tokens
from warmstart.mining.select import Selector
from warmstart.model import Example


def ex(
    tool: str, intent: str = "", err: float = 0.0, recovery: bool = False, **args: object
) -> Example:
    e = Example(
        tool=tool,
        intent=intent or f"use {tool}",
        arguments=json.dumps(args or {"q": tool}),
        result="ok",
        result_chars=2,
        tool_error_rate=err,
        failed_arguments=json.dumps({"bad": True}) if recovery else None,
        failed_result="Error: bad" if recovery else None,
    )
    e.tokens = example_tokens(e)
    return e


def test_budget_is_never_exceeded() -> None:
    pool = [ex(f"t{i}", q=i) for i in range(30)]
    for budget in (0, 10, 100, 400, 10_000):
        chosen = Selector(pool).select(budget)
        assert sum(e.tokens for e in chosen) <= budget
    assert Selector(pool).select(0) == []
    assert Selector([]).select(1000) == []


def test_covers_distinct_tools_before_repeating() -> None:
    pool = [ex("read_file", path=f"f{i}") for i in range(10)] + [ex("write_file"), ex("search")]
    chosen = Selector(pool).select(budget=3 * pool[0].tokens + 10)
    assert {e.tool for e in chosen} == {"read_file", "write_file", "search"}


def test_failing_tools_and_their_recovery_pairs_come_first() -> None:
    pool = [ex("calm", err=0.0), ex("flaky", err=0.5), ex("flaky", err=0.5, recovery=True)]
    first = Selector(pool).select(budget=10_000, max_examples=1)[0]
    assert first.tool == "flaky" and first.is_recovery


def test_near_duplicates_are_pushed_back() -> None:
    pool = [ex("search", q="a"), ex("search", q="b"), ex("lookup", id="1")]
    chosen = Selector(pool).select(budget=10_000)
    assert [e.tool for e in chosen][:2] in (["search", "lookup"], ["lookup", "search"])


def test_task_text_ranks_relevant_examples_first() -> None:
    pool = [
        ex("get_weather", intent="what is the weather in Paris", city="Paris"),
        ex("update_reservation_flights", intent="change my flight to another date", date="x"),
        ex("cancel_reservation", intent="cancel my booking please", id="1"),
    ]
    sel = Selector(pool)
    top = sel.select(budget=10_000, task="I want to change my flight to May 20", max_examples=1)
    assert top[0].tool == "update_reservation_flights"
    top = sel.select(budget=10_000, task="cancel the booking", max_examples=1)
    assert top[0].tool == "cancel_reservation"


def test_large_pools_use_the_shortlist_and_still_cover_tools() -> None:
    pool = [ex(f"tool{i % 50}", intent=f"job {i}", n=i) for i in range(5000)]
    pool.append(ex("rare_refund_tool", intent="refund the passenger fare", n=-1))
    chosen = Selector(pool).select(budget=2000, task="refund fare")
    assert chosen[0].tool == "rare_refund_tool"
    assert len({e.tool for e in chosen[:51]}) == 51
