"""Error messages that differ only in their values group together; the words stay."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warmstart.analytics.normalize import MAX_CHARS, normalize_message


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        (
            "Error: flight HAT030 not available on date 2024-05-13",
            "Error: flight <id> not available on date <date>",
        ),
        (
            "Error: payment amount does not add up, total price is 375, but paid 299",
            "Error: payment amount does not add up, total price is <n>, but paid <n>",
        ),
        (
            "Error: payment method gift_card_5094406 not found",
            "Error: payment method <id> not found",
        ),
        (
            "FileNotFoundError: [Errno 2] No such file or directory: '/home/ann/a.py'",
            "FileNotFoundError: [Errno <n>] No such file or directory: <str>",
        ),
        ("cannot open /srv/app/config.yaml", "cannot open <path>"),
        ('"error": "rate limit exceeded"', '"error": "rate limit exceeded"'),
        ("GET https://api.example.com/v1/x?id=3 failed", "GET <url> failed"),
        ("mail to ann@example.com bounced", "mail to <email> bounced"),
        ("job 123e4567-e89b-12d3-a456-426614174000 died", "job <uuid> died"),
        ("timeout at 12:30:05 after 1.5 s", "timeout at <time> after <n> s"),
        ("  spread\n over   lines ", "spread over lines"),
        (
            "token [REDACTED:openai-key] refused 3 times",
            "token [REDACTED:openai-key] refused <n> times",
        ),
        ("", ""),
    ],
)
def test_normalise(raw: str, normalised: str) -> None:
    assert normalize_message(raw) == normalised


def test_same_mistake_same_form() -> None:
    a = normalize_message("Error: not enough seats on flight HAT290")
    b = normalize_message("Error: not enough seats on flight HAT139")
    assert a == b != normalize_message("Error: gift card balance is not enough")


@given(st.text(max_size=2000))
def test_normalise_is_total_bounded_and_idempotent(text: str) -> None:
    once = normalize_message(text)
    assert len(once) <= MAX_CHARS
    if not once.endswith("…"):
        assert normalize_message(once) == once
