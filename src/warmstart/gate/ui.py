"""The approver web page and the confirmation page behind notification links.

The pages build the DOM with ``textContent`` only, and are served with a strict
Content-Security-Policy (scripts from the gate itself, no inline script).
"""

from __future__ import annotations

from html import escape
from typing import Any

STYLE = """
body{font:15px/1.4 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d232b}
header{background:#1d232b;color:#fff;padding:.8em 1.2em;display:flex;gap:1em;align-items:center}
header h1{font-size:1.1em;margin:0;flex:1}
main{padding:1em 1.2em;max-width:70em}
section{margin-bottom:2em}
.card{background:#fff;border:1px solid #d8dde3;border-radius:6px;padding:.8em 1em;margin:.6em 0}
.meta{color:#56606b;font-size:.9em}
pre{background:#f0f2f5;padding:.5em;overflow:auto;max-height:14em;white-space:pre-wrap}
button{font:inherit;padding:.35em .9em;border-radius:4px;border:1px solid #888;cursor:pointer}
button.approve{background:#1f7a3a;color:#fff;border-color:#1f7a3a}
button.deny{background:#b3261e;color:#fff;border-color:#b3261e}
.countdown{font-weight:600}
.error{color:#b3261e}
table{border-collapse:collapse;width:100%;background:#fff}
td,th{border-bottom:1px solid #e3e6ea;padding:.35em .5em;text-align:left;font-size:.92em}
"""

UI_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>warmstart approval gate</title>
<link rel="stylesheet" href="/ui/style.css"></head>
<body>
<header><h1>warmstart approval gate</h1><span id="who"></span></header>
<main>
<form id="login" hidden>
  <p>Sign in with an approver token.</p>
  <input id="token" type="password" autocomplete="off" placeholder="approver token" size="50">
  <button id="signin" type="submit">Sign in</button>
  <p id="login-error" class="error"></p>
</form>
<div id="app" hidden>
  <p id="error" class="error"></p>
  <section><h2>Pending <span id="pending-count"></span></h2><div id="pending"></div></section>
  <section><h2>Recent decisions</h2>
    <table><thead><tr><th>When</th><th>Action</th><th>Requester</th><th>Status</th>
    <th>By</th><th>Reason / comment</th></tr></thead><tbody id="decided"></tbody></table>
  </section>
</div>
</main>
<script src="/ui/app.js"></script>
</body></html>
"""

UI_JS = r"""
"use strict";
const state = {token: sessionStorage.getItem("gate-token") || "", auth: true, timer: null};

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v; else node.setAttribute(k, v);
  }
  for (const child of children) {
    node.append(child instanceof Node ? child : document.createTextNode(String(child ?? "")));
  }
  return node;
}

async function api(path, options) {
  const opts = options || {};
  opts.headers = Object.assign({"Content-Type": "application/json"}, opts.headers || {});
  if (state.token) opts.headers["Authorization"] = "Bearer " + state.token;
  const resp = await fetch(path, opts);
  let body = null;
  try { body = await resp.json(); } catch (e) { body = null; }
  if (!resp.ok) {
    const err = new Error((body && body.detail) || ("HTTP " + resp.status));
    err.status = resp.status;
    throw err;
  }
  return body;
}

function left(expires) {
  const secs = Math.max(0, Math.round((Date.parse(expires) - Date.now()) / 1000));
  const m = Math.floor(secs / 60), s = secs % 60;
  return m + ":" + String(s).padStart(2, "0");
}

function pendingCard(req) {
  const countdown = el("span", {"class": "countdown", "data-expires": req.expires_at},
                       left(req.expires_at));
  const reason = el("input", {"class": "reason", "placeholder": "reason for denying",
                              "size": "40"});
  reason.hidden = true;
  const approve = el("button", {"class": "approve", "type": "button"}, "Approve");
  const deny = el("button", {"class": "deny", "type": "button"}, "Deny");
  const confirmDeny = el("button", {"class": "confirm-deny", "type": "button"}, "Confirm deny");
  confirmDeny.hidden = true;
  const msg = el("span", {"class": "error"});
  approve.addEventListener("click", () => decide(req.id, "approve", {}, msg));
  deny.addEventListener("click", () => {
    reason.hidden = false; confirmDeny.hidden = false; reason.focus();
  });
  confirmDeny.addEventListener("click", () => {
    if (!reason.value.trim()) { msg.textContent = "a reason is required"; return; }
    decide(req.id, "deny", {reason: reason.value}, msg);
  });
  return el("div", {"class": "card pending", "data-id": req.id},
    el("div", {}, el("strong", {"class": "action"}, req.action), " from ",
       el("span", {"class": "requester"}, req.requester), " — expires in ", countdown),
    el("div", {"class": "description"}, req.description),
    el("div", {"class": "meta"}, "id " + req.id +
       (req.session_key ? " · session " + req.session_key : "")),
    el("pre", {"class": "details"}, JSON.stringify(req.details, null, 2)),
    el("div", {}, approve, " ", deny, " ", reason, " ", confirmDeny, " ", msg));
}

async function decide(id, decision, body, msg) {
  msg.textContent = "";
  try {
    await api("/confirm/" + encodeURIComponent(id) + "/" + decision,
              {method: "POST", body: JSON.stringify(body)});
    await refresh();
  } catch (e) { msg.textContent = e.message; }
}

async function refresh() {
  const error = document.getElementById("error");
  try {
    const [pending, decided] = await Promise.all([
      api("/confirm?status=pending&limit=200"), api("/confirm?status=decided&limit=20")]);
    const box = document.getElementById("pending");
    box.replaceChildren(...pending.map(pendingCard));
    if (!pending.length) box.append(el("p", {"class": "meta"}, "Nothing is waiting."));
    document.getElementById("pending-count").textContent = "(" + pending.length + ")";
    document.getElementById("decided").replaceChildren(...decided.map((r) => el("tr",
      {"class": "decided", "data-id": r.id}, el("td", {}, r.decided_at || ""),
      el("td", {}, r.action), el("td", {}, r.requester),
      el("td", {"class": "status"}, r.status), el("td", {}, r.decided_by || ""),
      el("td", {}, r.reason || r.comment || ""))));
    error.textContent = "";
  } catch (e) {
    if (e.status === 401 || e.status === 403) { signOut(e.message); return; }
    error.textContent = "cannot reach the gate: " + e.message;
  }
}

function tick() {
  for (const node of document.querySelectorAll(".countdown")) {
    node.textContent = left(node.dataset.expires);
  }
}

function signOut(message) {
  sessionStorage.removeItem("gate-token");
  state.token = "";
  clearInterval(state.timer);
  document.getElementById("app").hidden = true;
  document.getElementById("login").hidden = false;
  document.getElementById("login-error").textContent = message || "";
}

async function start() {
  document.getElementById("login").hidden = true;
  document.getElementById("app").hidden = false;
  document.getElementById("who").textContent = state.auth ? "signed in" : "no tokens (loopback)";
  await refresh();
  let n = 0;
  state.timer = setInterval(() => { tick(); if (++n % 2 === 0) refresh(); }, 1000);
}

document.getElementById("login").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  state.token = document.getElementById("token").value.trim();
  try {
    await api("/audit?limit=1");  // approvers only
    sessionStorage.setItem("gate-token", state.token);
    await start();
  } catch (e) { signOut(e.message); }
});

(async () => {
  try { state.auth = (await api("/health")).auth; } catch (e) { state.auth = true; }
  if (!state.auth || state.token) await start(); else signOut("");
})();
"""

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


def decide_page(request: dict[str, Any] | None, decision: str, sig: str, note: str) -> str:
    """The confirmation page a notification link opens: nothing is decided by a GET."""
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        "<title>Confirm decision</title><link rel='stylesheet' href='/ui/style.css'></head>",
        "<body><header><h1>warmstart approval gate</h1></header><main>",
    ]
    if note:
        parts.append(f"<p id='note'>{escape(note)}</p>")
    if request is not None:
        import json

        parts += [
            "<div class='card'>",
            f"<div><strong>{escape(request['action'])}</strong> from "
            f"{escape(request['requester'])}</div>",
            f"<div>{escape(request['description'])}</div>",
            f"<div class='meta'>id {escape(request['id'])} · status "
            f"<span id='status'>{escape(request['status'])}</span> · expires "
            f"{escape(request['expires_at'])}</div>",
            f"<pre>{escape(json.dumps(request['details'], indent=2))}</pre></div>",
        ]
        if request["status"] == "pending":
            label = "Approve" if decision == "approve" else "Deny"
            parts.append("<form method='post'>")
            parts.append(f"<input type='hidden' name='decision' value='{escape(decision)}'>")
            parts.append(f"<input type='hidden' name='sig' value='{escape(sig)}'>")
            if decision == "deny":
                parts.append(
                    "<p><label>Reason <input name='reason' required size='50'></label></p>"
                )
            parts.append(
                f"<button class='{escape(decision)}' type='submit' id='confirm'>"
                f"{label} this request</button></form>"
            )
    parts.append("</main></body></html>")
    return "".join(parts)
