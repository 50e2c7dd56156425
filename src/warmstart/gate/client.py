"""The agent side of the gate: :class:`GateClient` and the :func:`requires_approval` decorator.

``GateClient.request(...)`` submits, waits for the decision, and verifies that an
approval is bound to exactly the action and details that were asked for (the binding
hash) and signed by the gate. ``consume`` marks an approval used; the gate refuses a
second use. The URL and token default to ``$WARMSTART_GATE_URL`` and
``$WARMSTART_GATE_TOKEN``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import httpx

from warmstart.errors import ApprovalError
from warmstart.gate.security import binding_hash, canonical_json, signing_key, verify_approval

DEFAULT_URL = "http://127.0.0.1:6000"
F = TypeVar("F", bound=Callable[..., Any])


class GateHTTPError(ApprovalError):
    """The gate answered with an error status."""

    def __init__(self, status_code: int, detail: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(f"approval gate refused ({status_code}): {detail}")
        self.status_code = status_code
        self.detail = detail
        self.body = body or {}


@dataclass(frozen=True)
class Decision:
    """The outcome of one approval request."""

    id: str
    status: str
    action: str
    details: dict[str, Any]
    requester: str
    binding_hash: str
    signature: str | None = None
    decided_by: str | None = None
    reason: str | None = None
    comment: str | None = None
    expires_at: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def approved(self) -> bool:
        """True only for a verified approval that has not been used yet."""
        return self.status == "approved"

    @classmethod
    def from_view(cls, view: dict[str, Any]) -> Decision:
        """Build from the gate's JSON view of a request."""
        return cls(
            id=view["id"],
            status=view["status"],
            action=view["action"],
            details=view.get("details") or {},
            requester=view["requester"],
            binding_hash=view["binding_hash"],
            signature=view.get("signature"),
            decided_by=view.get("decided_by"),
            reason=view.get("reason"),
            comment=view.get("comment"),
            expires_at=view.get("expires_at"),
            raw=view,
        )


class GateClient:
    """A synchronous client of the gate's HTTP API."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        http_timeout: float = 15.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = (url or os.environ.get("WARMSTART_GATE_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else os.environ.get("WARMSTART_GATE_TOKEN")
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        self._http = httpx.Client(
            base_url=self.url, headers=headers, timeout=http_timeout, transport=transport
        )

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._http.close()

    def __enter__(self) -> GateClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- transport ------------------------------------------------------------------
    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TimeoutException as exc:
            raise ApprovalError(f"the approval gate at {self.url} did not answer in time") from exc
        except httpx.HTTPError as exc:
            raise ApprovalError(f"cannot reach the approval gate at {self.url}: {exc}") from exc
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code >= 400:
            detail = body.get("detail") if isinstance(body, dict) else None
            raise GateHTTPError(
                response.status_code,
                str(detail or response.reason_phrase),
                body if isinstance(body, dict) else None,
            )
        return body

    # -- agent side -----------------------------------------------------------------
    def submit(
        self,
        action: str,
        description: str,
        details: dict[str, Any] | None = None,
        *,
        timeout: int | None = None,
        session_key: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Submit a request without waiting; returns the gate's view of it."""
        body: dict[str, Any] = {"action": action, "description": description}
        body["details"] = details or {}
        if timeout is not None:
            body["timeout_seconds"] = timeout
        if session_key is not None:
            body["session_key"] = session_key
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        try:
            return cast(dict[str, Any], self._call("POST", "/confirm", json=body, headers=headers))
        except ApprovalError as exc:
            if isinstance(exc, GateHTTPError) or not idempotency_key:
                raise
            # The request may have arrived: the same key returns the same request.
            return cast(dict[str, Any], self._call("POST", "/confirm", json=body, headers=headers))

    def get(self, request_id: str) -> dict[str, Any]:
        """The gate's view of one request."""
        return cast(dict[str, Any], self._call("GET", f"/confirm/{request_id}"))

    def wait(self, request_id: str, timeout: float = 30) -> dict[str, Any]:
        """Long-poll once: the request after it is decided or ``timeout`` seconds pass."""
        return cast(
            dict[str, Any],
            self._call(
                "GET",
                f"/confirm/{request_id}/wait",
                params={"timeout": timeout},
                timeout=timeout + 15,
            ),
        )

    def request(
        self,
        action: str,
        description: str,
        details: dict[str, Any] | None = None,
        timeout: int = 300,
        *,
        session_key: str | None = None,
    ) -> Decision:
        """Ask for approval and wait for the decision.

        Returns the :class:`Decision` (approved, denied or expired); an approval is
        returned only after its binding hash and signature check out. Raises
        :class:`ApprovalError` when the gate refuses the request, cannot be reached, or
        answers with an approval that does not match what was asked.
        """
        details = json.loads(canonical_json(details or {}))
        view = self.submit(
            action,
            description,
            details,
            timeout=timeout,
            session_key=session_key,
            idempotency_key=str(uuid.uuid4()),
        )
        expected = binding_hash(action, details, view["requester"], session_key, view["expires_at"])
        if view["binding_hash"] != expected:
            raise ApprovalError("the gate stored a different action than the one submitted")
        # The gate expires the request at its (clamped) deadline; this only guards
        # against a gate that stops answering decisions.
        deadline = time.monotonic() + int(view["timeout_seconds"]) + 120
        while view["status"] == "pending":
            if time.monotonic() > deadline:
                raise ApprovalError(f"no decision on request {view['id']} in time")
            view = self.wait(view["id"], timeout=30)
        decision = Decision.from_view(view)
        if decision.status in ("approved", "consumed"):
            self.verify(decision, expected)
        return decision

    def verify(self, decision: Decision, expected_binding: str) -> None:
        """Check that an approval is bound to ``expected_binding`` and signed by the gate."""
        if decision.binding_hash != expected_binding:
            raise ApprovalError(f"approval {decision.id} is bound to a different action")
        if not decision.signature or not verify_approval(
            signing_key(self.token), decision.id, decision.binding_hash, decision.signature
        ):
            raise ApprovalError(f"approval {decision.id} does not carry a valid gate signature")

    def consume(self, decision: Decision) -> dict[str, Any]:
        """Mark an approval used as the action runs; a second use raises ApprovalError."""
        if not decision.approved:
            raise ApprovalError(f"request {decision.id} is {decision.status}, not approved")
        return cast(
            dict[str, Any],
            self._call(
                "POST",
                f"/confirm/{decision.id}/consume",
                json={"binding_hash": decision.binding_hash},
            ),
        )

    # -- approver side --------------------------------------------------------------
    def list_requests(
        self, status: str | None = "pending", limit: int = 100
    ) -> list[dict[str, Any]]:
        """Requests by status (``decided`` for final ones)."""
        params: dict[str, Any] = {"limit": limit}
        if status:
            params["status"] = status
        return cast(list[dict[str, Any]], self._call("GET", "/confirm", params=params))

    def approve(self, request_id: str, comment: str | None = None) -> dict[str, Any]:
        """Approve a pending request."""
        body = {"comment": comment} if comment else {}
        return cast(dict[str, Any], self._call("POST", f"/confirm/{request_id}/approve", json=body))

    def deny(self, request_id: str, reason: str) -> dict[str, Any]:
        """Deny a pending request with a reason."""
        return cast(
            dict[str, Any],
            self._call("POST", f"/confirm/{request_id}/deny", json={"reason": reason}),
        )

    def audit(self, limit: int = 50) -> list[dict[str, Any]]:
        """The newest audit rows."""
        return cast(list[dict[str, Any]], self._call("GET", "/audit", params={"limit": limit}))

    def verify_audit(self) -> dict[str, Any]:
        """Check the audit chain on the server."""
        return cast(dict[str, Any], self._call("GET", "/audit/verify"))

    def allow_session(self, session_key: str, actions: list[str]) -> list[str]:
        """Auto-approve ``actions`` within one session (never high-risk ones)."""
        body = self._call("POST", f"/sessions/{session_key}/allow", json={"actions": actions})
        return cast(list[str], body["actions"])

    def health(self) -> dict[str, Any]:
        """The gate's health document."""
        return cast(dict[str, Any], self._call("GET", "/health"))


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=repr))


def requires_approval(
    action: str,
    *,
    description: str | None = None,
    client: GateClient | Callable[[], GateClient] | None = None,
    timeout: int = 300,
    session_key: str | None = None,
) -> Callable[[F], F]:
    """Decorate a tool function so it runs only after a bound, single-use approval.

    The call's arguments become the request's details. A denial, an expiry or any
    gate failure raises :class:`ApprovalError` and the function does not run.
    """

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)
        text = description or (inspect.getdoc(fn) or "").split("\n", 1)[0] or fn.__qualname__

        def approve(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            details = {"function": fn.__qualname__, "arguments": _json_safe(bound.arguments)}
            gate = client() if callable(client) else client
            owned = gate is None
            gate = gate or GateClient()
            try:
                decision = gate.request(action, text, details, timeout, session_key=session_key)
                if not decision.approved:
                    why = f": {decision.reason}" if decision.reason else ""
                    raise ApprovalError(f"{action} was {decision.status}{why}")
                gate.consume(decision)
            finally:
                if owned:
                    gate.close()

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                await asyncio.to_thread(approve, args, kwargs)
                return await fn(*args, **kwargs)

            return cast(F, async_wrapper)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            approve(args, kwargs)
            return fn(*args, **kwargs)

        return cast(F, wrapper)

    return decorate
