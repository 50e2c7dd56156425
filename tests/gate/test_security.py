"""Credentials, bound single-use approvals, and the loopback rule, over real HTTP."""

from __future__ import annotations

import dataclasses

import httpx
import pytest
from tests.gate.conftest import APPROVER_SPECS, REQUESTER_SPECS, TOKENS, RunningGate, auth

from warmstart.errors import ApprovalError, ConfigError
from warmstart.gate.client import Decision, GateClient
from warmstart.gate.security import (
    Credentials,
    binding_hash,
    hash_token,
    sign_link,
    signing_key,
    verify_approval,
)
from warmstart.gate.server import effective_settings
from warmstart.gate.settings import GateSettings

BODY = {"action": "delete_data", "description": "Drop old rows", "details": {"table": "t"}}


def submit(gate: RunningGate, who: str = "agent-1", **extra: object) -> dict[str, object]:
    resp = httpx.post(f"{gate.url}/confirm", json={**BODY, **extra}, headers=auth(who))
    assert resp.status_code == 202, resp.text
    return dict(resp.json())


def test_missing_or_wrong_token_is_401(auth_gate: RunningGate) -> None:
    assert httpx.post(f"{auth_gate.url}/confirm", json=BODY).status_code == 401
    bad = httpx.post(
        f"{auth_gate.url}/confirm", json=BODY, headers={"Authorization": "Bearer nope"}
    )
    assert bad.status_code == 401 and bad.headers["WWW-Authenticate"] == "Bearer"
    assert httpx.get(f"{auth_gate.url}/health").json()["auth"] is True


def test_requester_cannot_approve_and_nobody_approves_their_own(auth_gate: RunningGate) -> None:
    req = submit(auth_gate)
    assert req["requester"] == "agent-1"
    url = f"{auth_gate.url}/confirm/{req['id']}"
    assert httpx.post(f"{url}/approve", headers=auth("agent-1")).status_code == 403
    assert httpx.post(f"{url}/approve", headers=auth("agent-2")).status_code == 403
    own = submit(auth_gate, "carol")  # carol holds both roles
    self_approval = httpx.post(
        f"{auth_gate.url}/confirm/{own['id']}/approve", headers=auth("carol")
    )
    assert self_approval.status_code == 403
    assert "submitted" in self_approval.json()["detail"]
    assert httpx.post(f"{url}/approve", headers=auth("carol")).json()["decided_by"] == "carol"


def test_approvers_cannot_submit_and_requesters_see_only_their_own(auth_gate: RunningGate) -> None:
    assert (
        httpx.post(f"{auth_gate.url}/confirm", json=BODY, headers=auth("alice")).status_code == 403
    )
    req = submit(auth_gate)
    submit(auth_gate, "agent-2")
    assert (
        httpx.get(f"{auth_gate.url}/confirm/{req['id']}", headers=auth("agent-2")).status_code
        == 404
    )
    assert (
        httpx.get(f"{auth_gate.url}/confirm/{req['id']}", headers=auth("agent-1")).status_code
        == 200
    )
    mine = httpx.get(f"{auth_gate.url}/confirm", headers=auth("agent-2")).json()
    assert [r["requester"] for r in mine] == ["agent-2"]
    assert len(httpx.get(f"{auth_gate.url}/confirm", headers=auth("bob")).json()) == 2
    for path in ("/audit", "/audit/verify", "/events"):
        assert httpx.get(f"{auth_gate.url}{path}", headers=auth("agent-1")).status_code == 403


def test_tokens_are_held_only_as_digests() -> None:
    creds = Credentials.from_specs(REQUESTER_SPECS, APPROVER_SPECS)
    dump = repr(creds) + repr([dataclasses.asdict(p) for _, p in creds.entries])
    for token in TOKENS.values():
        assert token not in dump
    assert {digest for digest, _ in creds.entries} == {hash_token(t) for t in TOKENS.values()}
    carol = creds.authenticate(TOKENS["carol"])
    assert carol is not None and carol.is_requester and carol.is_approver
    assert creds.authenticate(TOKENS["carol"] + "x") is None
    with pytest.raises(ConfigError, match="shorter"):
        Credentials.from_specs(["a:short"], [])
    with pytest.raises(ConfigError, match="NAME:TOKEN"):
        Credentials.from_specs(["no-colon-token-0123456789"], [])


def test_constant_time_comparison_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    import hmac

    from warmstart.gate import security

    calls: list[tuple[str, str]] = []
    real = hmac.compare_digest

    def spy(a: str, b: str) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(security.hmac, "compare_digest", spy)
    creds = Credentials.from_specs(REQUESTER_SPECS, APPROVER_SPECS)
    creds.authenticate(TOKENS["agent-1"])
    assert len(calls) == len(creds.entries)  # every digest compared, no early exit


def test_without_tokens_the_gate_binds_to_loopback_only() -> None:
    settings, warning = effective_settings(GateSettings(host="0.0.0.0"))
    assert settings.host == "127.0.0.1"
    assert warning is not None and "no tokens configured" in warning
    kept, note = effective_settings(
        GateSettings(host="0.0.0.0", approver_tokens=APPROVER_SPECS[:1])
    )
    assert kept.host == "0.0.0.0" and note is None
    assert "loopback" in (effective_settings(GateSettings())[1] or "")


def test_approval_is_signed_bound_and_single_use(auth_gate: RunningGate) -> None:
    req = submit(auth_gate, session_key="s1")
    approved = httpx.post(
        f"{auth_gate.url}/confirm/{req['id']}/approve", headers=auth("alice")
    ).json()
    expected = binding_hash(
        "delete_data", {"table": "t"}, "agent-1", "s1", str(approved["expires_at"])
    )
    assert approved["binding_hash"] == expected
    key = signing_key(TOKENS["agent-1"])
    assert verify_approval(key, approved["id"], expected, approved["signature"])
    assert not verify_approval(
        signing_key(TOKENS["agent-2"]), approved["id"], expected, approved["signature"]
    )
    client = GateClient(auth_gate.url, TOKENS["agent-1"])
    decision = Decision.from_view(approved)
    client.verify(decision, expected)
    other = binding_hash("delete_data", {"table": "users"}, "agent-1", "s1", approved["expires_at"])
    with pytest.raises(ApprovalError, match="different action"):
        client.verify(decision, other)
    forged = dataclasses.replace(decision, signature="0" * 64)
    with pytest.raises(ApprovalError, match="signature"):
        client.verify(forged, expected)
    with pytest.raises(ApprovalError):  # someone else's token cannot consume it
        GateClient(auth_gate.url, TOKENS["agent-2"]).consume(decision)
    assert client.consume(decision)["status"] == "consumed"
    with pytest.raises(ApprovalError, match="already consumed"):
        client.consume(decision)
    events = [r["event"] for r in GateClient(auth_gate.url, TOKENS["bob"]).audit()]
    assert events[:3] == ["consumed", "approved", "submitted"]


def test_signed_links_show_a_page_and_only_post_decides(gate: RunningGate) -> None:
    req = httpx.post(f"{gate.url}/confirm", json=BODY).json()
    sig = sign_link(gate.service.secret, req["id"], "approve")
    link = f"{gate.url}/ui/decide/{req['id']}"
    page = httpx.get(link, params={"decision": "approve", "sig": sig})
    assert page.status_code == 200 and "Approve this request" in page.text
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert httpx.get(f"{gate.url}/confirm/{req['id']}").json()["status"] == "pending"
    forged = httpx.post(link, data={"decision": "approve", "sig": "0" * 64})
    assert forged.status_code == 403
    wrong_kind = httpx.post(link, data={"decision": "deny", "sig": sig, "reason": "x"})
    assert wrong_kind.status_code == 403  # an approve link cannot deny
    done = httpx.post(link, data={"decision": "approve", "sig": sig})
    assert done.status_code == 200 and "Approved" in done.text
    state = httpx.get(f"{gate.url}/confirm/{req['id']}").json()
    assert (state["status"], state["decided_by"]) == ("approved", "link")
    again = httpx.post(link, data={"decision": "approve", "sig": sig})
    assert again.status_code == 409


def test_deny_link_needs_a_reason(gate: RunningGate) -> None:
    req = httpx.post(f"{gate.url}/confirm", json=BODY).json()
    sig = sign_link(gate.service.secret, req["id"], "deny")
    link = f"{gate.url}/ui/decide/{req['id']}"
    assert "name='reason'" in httpx.get(link, params={"decision": "deny", "sig": sig}).text
    assert httpx.post(link, data={"decision": "deny", "sig": sig}).status_code == 400
    done = httpx.post(link, data={"decision": "deny", "sig": sig, "reason": "<b>no</b>"})
    assert done.status_code == 200 and "<b>no</b>" not in done.text
    assert httpx.get(f"{gate.url}/confirm/{req['id']}").json()["reason"] == "<b>no</b>"
