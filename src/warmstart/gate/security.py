"""Credentials, ids and the hashes and signatures that bind an approval to its action.

Tokens are kept only as SHA-256 digests and compared in constant time. An approval
carries an HMAC over the request's *binding hash* (a canonical hash of action,
details, requester, session and expiry) keyed by a key derived from the requester's
token, so the requesting client can check that the gate approved exactly what it
asked for. Links in notifications carry an HMAC keyed by the gate's own secret.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import re
import secrets
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from warmstart.errors import ConfigError

ROLE_REQUESTER = "requester"
ROLE_APPROVER = "approver"
NAME_RE = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
MIN_TOKEN_CHARS = 16
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_id() -> str:
    """A ULID: 26 Crockford base32 characters, sortable by creation time."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_token() -> str:
    """A fresh random token suitable for requester or approver credentials."""
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """The stored form of a token: its SHA-256 hex digest."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def signing_key(token: str | None) -> bytes:
    """The key that signs approvals for a requester holding ``token``.

    Derived from the token itself, so the requester can verify signatures without any
    other shared secret. With no token (loopback mode) the key is public: the signature
    then proves integrity only, not origin.
    """
    return hmac.new(b"warmstart-gate/approval-key", (token or "").encode(), "sha256").digest()


def canonical_json(value: Any) -> str:
    """Deterministic JSON: sorted keys, no spaces, ASCII only, no NaN."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


@functools.lru_cache(maxsize=8192)
def format_ts(ts: float) -> str:
    """A UTC timestamp in ISO 8601 with milliseconds and a ``Z``."""
    ms = round(ts * 1000)
    stamp = datetime.fromtimestamp(ms // 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{ms % 1000:03d}Z"


def binding_hash(
    action: str, details: dict[str, Any], requester: str, session_key: str | None, expires_at: str
) -> str:
    """The canonical hash an approval is bound to."""
    payload = {
        "action": action,
        "details": details,
        "expires_at": expires_at,
        "requester": requester,
        "session_key": session_key,
    }
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


def sign_approval(key: bytes, request_id: str, binding: str) -> str:
    """The signature an approved request carries."""
    return hmac.new(key, f"{request_id}\napproved\n{binding}".encode(), "sha256").hexdigest()


def verify_approval(key: bytes, request_id: str, binding: str, signature: str) -> bool:
    """Whether ``signature`` is the gate's signature of this approval."""
    return hmac.compare_digest(sign_approval(key, request_id, binding), signature)


def sign_link(secret: bytes, request_id: str, decision: str) -> str:
    """The signature carried by an approve or deny link in a notification."""
    return hmac.new(secret, f"link\n{request_id}\n{decision}".encode(), "sha256").hexdigest()


def verify_link(secret: bytes, request_id: str, decision: str, signature: str) -> bool:
    """Whether a link signature is valid for this request and decision."""
    return hmac.compare_digest(sign_link(secret, request_id, decision), signature)


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: a name and the roles its token grants."""

    name: str
    roles: frozenset[str]
    key: bytes = field(repr=False, default=b"")

    @property
    def is_requester(self) -> bool:
        return ROLE_REQUESTER in self.roles

    @property
    def is_approver(self) -> bool:
        return ROLE_APPROVER in self.roles


LOCAL = Principal("local", frozenset({ROLE_REQUESTER, ROLE_APPROVER}), signing_key(None))


@dataclass
class Credentials:
    """Configured tokens, held only as digests; authenticates bearer tokens."""

    entries: list[tuple[str, Principal]] = field(default_factory=list)

    @property
    def enabled(self) -> bool:
        """False when no token is configured (loopback-only mode)."""
        return bool(self.entries)

    @classmethod
    def from_specs(cls, requester: list[str], approver: list[str]) -> Credentials:
        """Parse ``name:token`` specs; the plaintext tokens are not kept."""
        by_digest: dict[str, tuple[str, set[str], bytes]] = {}
        for role, specs in ((ROLE_REQUESTER, requester), (ROLE_APPROVER, approver)):
            for spec in specs:
                name, sep, token = spec.partition(":")
                if not sep or not NAME_RE.match(name):
                    raise ConfigError(
                        f"{role} token must look like NAME:TOKEN with NAME of letters, "
                        "digits, '_', '.', '@' or '-'"
                    )
                if len(token) < MIN_TOKEN_CHARS:
                    raise ConfigError(
                        f"{role} token for {name!r} is shorter than {MIN_TOKEN_CHARS} characters"
                    )
                digest = hash_token(token)
                if digest in by_digest and by_digest[digest][0] != name:
                    raise ConfigError(f"one token is configured for two names ({name!r})")
                entry = by_digest.setdefault(digest, (name, set(), signing_key(token)))
                entry[1].add(role)
        return cls(
            [
                (digest, Principal(name, frozenset(roles), key))
                for digest, (name, roles, key) in by_digest.items()
            ]
        )

    def authenticate(self, token: str | None) -> Principal | None:
        """The principal holding ``token``, comparing every digest in constant time."""
        if not self.enabled:
            return LOCAL
        if not token:
            return None
        digest = hash_token(token)
        found: Principal | None = None
        for stored, principal in self.entries:
            if hmac.compare_digest(stored, digest):
                found = principal
        return found

    def key_for(self, requester: str) -> bytes:
        """The approval signing key of a requester name (public key when unknown)."""
        if not self.enabled:
            return signing_key(None)
        for _, principal in self.entries:
            if principal.name == requester and principal.is_requester:
                return principal.key
        return signing_key(None)
