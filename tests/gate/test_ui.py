"""The approver page in a real headless Chromium: a waiting client gets the approval."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from tests.gate.conftest import TOKENS, RunningGate

from warmstart.gate.client import Decision, GateClient

pytestmark = pytest.mark.chromium


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    try:
        yield context.new_page()
    finally:
        context.close()


def wait_in_background(client: GateClient, **kwargs: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(client.request(**kwargs))
        except Exception as exc:
            out.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def test_approve_through_the_page_reaches_the_waiting_client(
    auth_gate: RunningGate, page: Any
) -> None:
    agent = GateClient(auth_gate.url, TOKENS["agent-1"])
    thread, out = wait_in_background(
        agent,
        action="deploy_production",
        description="Deploy <b>v3</b> to production",
        details={"version": "3.0", "note": "<script>alert(1)</script>"},
        timeout=120,
    )
    page.goto(f"{auth_gate.url}/ui")
    page.fill("#token", TOKENS["agent-2"])  # a requester token is not enough
    page.click("#signin")
    page.wait_for_selector("#login-error:has-text('approver token')")
    page.fill("#token", TOKENS["alice"])
    page.click("#signin")
    card = page.locator(".card.pending").first
    card.wait_for(timeout=10_000)
    assert card.locator(".action").inner_text() == "deploy_production"
    assert card.locator(".requester").inner_text() == "agent-1"
    assert card.locator(".description").inner_text() == "Deploy <b>v3</b> to production"
    assert "<script>alert(1)</script>" in card.locator(".details").inner_text()
    countdown = card.locator(".countdown").inner_text()
    assert countdown.startswith(("1:", "2:"))  # about two minutes left
    card.locator("button.approve").click()
    page.wait_for_selector("tr.decided td.status:has-text('approved')", timeout=10_000)
    thread.join(20)
    [decision] = out
    assert isinstance(decision, Decision)
    assert decision.approved and decision.decided_by == "alice"
    assert agent.consume(decision)["status"] == "consumed"


def test_deny_through_the_page_asks_for_a_reason(gate: RunningGate, page: Any) -> None:
    thread, out = wait_in_background(
        GateClient(gate.url), action="wipe_database", description="Wipe staging", timeout=120
    )
    page.goto(f"{gate.url}/ui")  # no tokens configured: no sign-in
    card = page.locator(".card.pending").first
    card.wait_for(timeout=10_000)
    card.locator("button.deny").click()
    card.locator("button.confirm-deny").click()
    page.wait_for_selector(".card.pending .error:has-text('reason is required')")
    card.locator("input.reason").fill("staging is in use")
    card.locator("button.confirm-deny").click()
    page.wait_for_selector("tr.decided td.status:has-text('denied')", timeout=10_000)
    thread.join(20)
    [decision] = out
    assert isinstance(decision, Decision)
    assert (decision.status, decision.reason) == ("denied", "staging is in use")
