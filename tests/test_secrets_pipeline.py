"""No secret mined from a session survives into examples, templates, histories or exports."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import warmstart
from warmstart.store import Store


def _b64(obj: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


SECRETS = {
    "aws": "AKIAIOSFODNN7EXAMPLQ",
    "aws-secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEYq",
    "github": "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "openai": "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa9876543210",
    "anthropic": "sk-ant-api03-" + "q" * 20 + "Wm4-Xn7_" + "k" * 60 + "AA",
    "slack": "xoxb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx",
    "jwt": _b64({"alg": "HS256", "typ": "JWT"})
    + "."
    + _b64({"sub": "1234567890", "n": "Jo"})
    + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "pg-password": "S3cr3tPassw0rd",
    "bearer": "eyQ2Tm9SZWFsVG9rZW5CdXRMb25nRW5vdWdoMTIzNDU2Nzg5MA",
}
PEM_BODY = "MIIEowIBAAKCAQEA7bq3" + "Qk9" * 30
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"


def _session(i: int, arguments: dict[str, object], result: str) -> str:
    return json.dumps(
        {
            "id": f"s{i}",
            "messages": [
                {"role": "user", "content": f"deploy with key {SECRETS['openai']} please"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "function": {"name": f"tool{i}", "arguments": json.dumps(arguments)},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": result},
            ],
        }
    )


def test_no_secret_reaches_any_output(sqlite_url: str, tmp_path: Path) -> None:
    lines = [
        _session(
            0,
            {
                "env": {
                    "AWS_ACCESS_KEY_ID": SECRETS["aws"],
                    "AWS_SECRET_ACCESS_KEY": SECRETS["aws-secret"],
                }
            },
            "deployed",
        ),
        _session(
            1,
            {"url": f"postgres://admin:{SECRETS['pg-password']}@db.internal:5432/app"},
            "connected",
        ),
        _session(
            2,
            {"headers": {"Authorization": f"Bearer {SECRETS['bearer']}"}},
            f"token echoed: {SECRETS['github']}",
        ),
        _session(3, {"cmd": "cat id_rsa"}, PEM),
        _session(4, {"token": SECRETS["slack"]}, json.dumps({"jwt": SECRETS["jwt"]})),
        _session(5, {"key": SECRETS["anthropic"]}, "ok"),
    ]
    path = tmp_path / "secrets.jsonl"
    path.write_text("\n".join(lines) + "\n")
    warmstart.ingest(path, db=sqlite_url)
    tpl = warmstart.build_template("leaky", sqlite_url, budget=100_000)
    assert len(tpl.examples) == 6
    outputs = {
        "examples": json.dumps(
            [e.__dict__ for e in Store(sqlite_url).load_template("leaky").examples]
        ),
        "openai": json.dumps(warmstart.warm_history("leaky", budget=100_000, db=sqlite_url)),
        "anthropic": json.dumps(
            warmstart.warm_history("leaky", budget=100_000, db=sqlite_url, fmt="anthropic")
        ),
        "hermes": json.dumps(
            warmstart.warm_history("leaky", budget=100_000, db=sqlite_url, fmt="hermes")
        ),
        "export": json.dumps(warmstart.export_template("leaky", sqlite_url)),
    }
    for where, text in outputs.items():
        for kind, secret in SECRETS.items():
            assert secret not in text, f"{kind} secret leaked into {where}"
            assert secret[4:20] not in text, f"part of {kind} secret leaked into {where}"
        assert PEM_BODY[:24] not in text, f"private key leaked into {where}"
        assert "[REDACTED:" in text
    # The warm history still teaches: the structure and non-secret parts survive.
    assert "db.internal" in outputs["openai"]
