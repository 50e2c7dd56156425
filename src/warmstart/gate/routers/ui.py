"""``/ui``: the approver page, and the confirmation page behind notification links.

A GET of a signed link only shows the request and a button; only the POST decides,
so link scanners that fetch URLs decide nothing.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qs

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from warmstart.gate.deps import ID_RE, Service
from warmstart.gate.exceptions import GateRefusal
from warmstart.gate.security import verify_link
from warmstart.gate.store import GateRequest
from warmstart.gate.ui import CSP, STYLE, UI_HTML, UI_JS, decide_page

router = APIRouter(prefix="/ui", tags=["ui"])
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
}
MAX_FORM_BYTES = 8192


@router.get("", response_class=HTMLResponse)
async def page() -> HTMLResponse:
    """The approver page: pending requests, countdowns, approve and deny, recent decisions."""
    return HTMLResponse(UI_HTML, headers=HEADERS)


@router.get("/app.js", include_in_schema=False)
async def script() -> Response:
    """The approver page's script."""
    return Response(UI_JS, media_type="text/javascript", headers=HEADERS)


@router.get("/style.css", include_in_schema=False)
async def style() -> Response:
    """The pages' style sheet."""
    return Response(STYLE, media_type="text/css", headers=HEADERS)


@router.get("/decide/{request_id}", response_class=HTMLResponse)
async def confirm_page(
    request_id: str,
    service: Service,
    decision: Annotated[str, Query(max_length=10)] = "",
    sig: Annotated[str, Query(max_length=128)] = "",
) -> HTMLResponse:
    """Show a request with a button to confirm the linked decision (decides nothing)."""
    status, record = await _checked(service, request_id, decision, sig)
    if record is None:
        return _html(decide_page(None, decision, sig, "This link is not valid."), status)
    view = service.view(record)
    note = "" if record.status == "pending" else f"This request is already {record.status}."
    return _html(decide_page(view, decision, sig, note), 200)


@router.post("/decide/{request_id}", response_class=HTMLResponse)
async def confirm_decision(request_id: str, request: Request, service: Service) -> HTMLResponse:
    """Apply the decision a signed link carries (form fields ``decision``, ``sig``, ``reason``)."""
    raw = await request.body()
    if len(raw) > MAX_FORM_BYTES:
        return _html(decide_page(None, "", "", "The form is too large."), 413)
    try:
        form = {k: v[0] for k, v in parse_qs(raw.decode("utf-8", "strict")).items()}
    except UnicodeDecodeError:
        return _html(decide_page(None, "", "", "The form is not valid text."), 400)
    decision, sig = form.get("decision", ""), form.get("sig", "")
    status, record = await _checked(service, request_id, decision, sig)
    if record is None:
        return _html(decide_page(None, decision, sig, "This link is not valid."), status)
    reason = (form.get("reason") or "").replace("\x00", "").strip()[:2000] or None
    if decision == "deny" and not reason:
        return _html(decide_page(service.view(record), decision, sig, "A reason is needed."), 400)
    try:
        record = await service.decide(
            request_id, decision == "approve", "link", reason=reason if decision == "deny" else None
        )
    except GateRefusal as exc:
        fresh = await service.run(service.store.get, request_id)
        return _html(decide_page(service.view(fresh), decision, sig, exc.message), exc.status_code)
    word = "Approved" if decision == "approve" else "Denied"
    return _html(decide_page(service.view(record), decision, sig, f"{word}. Thank you."), 200)


async def _checked(
    service: Service, request_id: str, decision: str, sig: str
) -> tuple[int, GateRequest | None]:
    if not ID_RE.match(request_id) or decision not in ("approve", "deny"):
        return 404, None
    if not verify_link(service.secret, request_id, decision, sig):
        return 403, None
    try:
        return 200, await service.run(service.store.get, request_id)
    except GateRefusal as exc:
        return exc.status_code, None


def _html(body: str, status: int) -> HTMLResponse:
    return HTMLResponse(body, status_code=status, headers=HEADERS)
