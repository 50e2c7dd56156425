"""Redaction: no secret survives (whole or in part), ordinary tool output is untouched."""

from __future__ import annotations

import base64
import json
import random
import string
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from warmstart.mining import redact
from warmstart.mining.redact import KINDS, Redaction, redact_json, redact_text, redact_value

# ---------------------------------------------------------------------------------
# Fake secrets in their real formats (prefixes, lengths, alphabets), made per seed.
# ---------------------------------------------------------------------------------

ALNUM = string.ascii_letters + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
B64URL = ALNUM + "-_"


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


@dataclass(frozen=True)
class Fake:
    """A secret as it appears in text, its secret parts (not the fixed prefixes every
    key of its kind shares), and its kind."""

    name: str
    text: str
    material: tuple[str, ...]
    kind: str


def aws_access_key(rng: random.Random) -> Fake:
    key = "AKIA" + _pick(rng, UPPER_ALNUM, 16)
    return Fake("aws-access-key", key, (key,), "aws-access-key")


def aws_secret_key(rng: random.Random) -> Fake:
    secret = _pick(rng, ALNUM + "/+", 40)
    return Fake("aws-secret-key", f"aws_secret_access_key = {secret}", (secret,), "aws-secret-key")


def github_token(rng: random.Random) -> Fake:
    token = rng.choice(["ghp_", "gho_", "ghs_"]) + _pick(rng, ALNUM, 36)
    return Fake("github-token", token, (token,), "github-token")


def github_pat(rng: random.Random) -> Fake:
    body = _pick(rng, ALNUM, 22) + "_" + _pick(rng, ALNUM, 59)
    return Fake("github-pat", "github_pat_" + body, (body,), "github-token")


def openai_key(rng: random.Random) -> Fake:
    body = _pick(rng, B64URL, 156)
    return Fake("openai-key", "sk-proj-" + body, (body,), "openai-key")


def openai_legacy_key(rng: random.Random) -> Fake:
    head, tail = _pick(rng, ALNUM, 20), _pick(rng, ALNUM, 20)
    return Fake("openai-legacy", f"sk-{head}T3BlbkFJ{tail}", (head, tail), "openai-key")


def anthropic_key(rng: random.Random) -> Fake:
    body = _pick(rng, B64URL, 93)
    return Fake("anthropic-key", f"sk-ant-api03-{body}AA", (body,), "anthropic-key")


def slack_token(rng: random.Random) -> Fake:
    prefix = rng.choice(["xoxb-", "xoxp-"])
    token = f"{prefix}{_pick(rng, string.digits, 12)}-{_pick(rng, string.digits, 13)}-"
    token += _pick(rng, ALNUM, 24)
    return Fake("slack-token", token, (token,), "slack-token")


def slack_webhook(rng: random.Random) -> Fake:
    path = f"T{_pick(rng, UPPER_ALNUM, 8)}/B{_pick(rng, UPPER_ALNUM, 10)}/{_pick(rng, ALNUM, 24)}"
    return Fake(
        "slack-webhook", f"https://hooks.slack.com/services/{path}", (path,), "slack-webhook"
    )


def jwt(rng: random.Random) -> Fake:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = {"sub": f"user_{rng.randrange(10**6)}", "iat": 1714000000, "exp": 1714003600}
    payload, signature = _b64url(json.dumps(claims).encode()), _b64url(rng.randbytes(32))
    return Fake("jwt", f"{header}.{payload}.{signature}", (payload, signature), "jwt")


def pem_block(rng: random.Random, label: str = "RSA PRIVATE KEY") -> Fake:
    body = base64.b64encode(rng.randbytes(48 * 8)).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    block = f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"
    return Fake("pem", block, tuple(lines), "private-key")


def openssh_key(rng: random.Random) -> Fake:
    return pem_block(rng, "OPENSSH PRIVATE KEY")


def url_credentials(rng: random.Random) -> Fake:
    password = _pick(rng, ALNUM, 10) + rng.choice("!$%*~") + _pick(rng, ALNUM, 5)
    url = f"postgres://app_user:{password}@db.example.com:5432/app"
    return Fake("url-credentials", url, (password,), "url-credentials")


def bearer_header(rng: random.Random) -> Fake:
    token = _pick(rng, B64URL, 40)
    return Fake("bearer", f"Authorization: Bearer {token}", (token,), "bearer-token")


def basic_header(rng: random.Random) -> Fake:
    cred = base64.b64encode(f"deploy:{_pick(rng, ALNUM, 14)}".encode()).decode()
    return Fake("basic", f"Authorization: Basic {cred}", (cred,), "basic-auth")


def password_assignment(rng: random.Random) -> Fake:
    password = _pick(rng, string.ascii_lowercase, 6) + _pick(rng, string.digits, 4) + "#Q"
    return Fake("password", f"DB_PASSWORD={password}", (password,), "password")


FACTORIES: tuple[Callable[[random.Random], Fake], ...] = (
    aws_access_key,
    aws_secret_key,
    github_token,
    github_pat,
    openai_key,
    openai_legacy_key,
    anthropic_key,
    slack_token,
    slack_webhook,
    jwt,
    pem_block,
    openssh_key,
    url_credentials,
    bearer_header,
    basic_header,
    password_assignment,
)

# ---------------------------------------------------------------------------------
# Where secrets show up: tool results and arguments of several shapes.
# ---------------------------------------------------------------------------------


def shell_output(s: str) -> str:
    return f"$ ./deploy.sh --env prod\nloading config\n{s}\nupload finished in 3.2s\n"


def log_line(s: str) -> str:
    return f"2024-05-01T12:00:00Z INFO worker-3 configured with {s} (retry=0)"


def traceback_text(s: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/client.py", line 42, in connect\n'
        f"    session.connect({s!r})\n"
        f"ConnectionError: handshake failed for {s}\n"
    )


def json_arguments(s: str) -> str:
    return json.dumps({"command": "run", "args": ["--verbose"], "input": s, "timeout": 30})


def json_result(s: str) -> str:
    return json.dumps({"ok": True, "stdout": f"config:\n  value: x\n{s}\n", "exit_code": 0})


def url_query(s: str) -> str:
    return f"GET https://api.example.com/v1/upload?file=a.txt&sig={s} -> 403 Forbidden"


CONTEXTS: tuple[Callable[[str], str], ...] = (
    shell_output,
    log_line,
    traceback_text,
    json_arguments,
    json_result,
    url_query,
)


def assert_gone(output: str, fake: Fake) -> None:
    """Neither the secret nor any 8-character piece of it is left."""
    for material in fake.material:
        assert material not in output
        for i in range(len(material) - 7):
            assert material[i : i + 8] not in output, f"{fake.name}: {material[i : i + 8]!r} left"


def redact_any(raw: str) -> Redaction:
    """Redact as JSON when the text is JSON (as the miner does), else as text."""
    try:
        json.loads(raw)
    except ValueError:
        return redact_text(raw)
    result = redact_json(raw)
    json.loads(result.text)  # still valid JSON
    return result


@pytest.mark.parametrize("factory", FACTORIES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("context", CONTEXTS, ids=lambda c: c.__name__)
def test_no_fake_secret_survives_in_any_context(
    factory: Callable[[random.Random], Fake], context: Callable[[str], str]
) -> None:
    for seed in range(3):
        fake = factory(random.Random(f"{factory.__name__}-{context.__name__}-{seed}"))
        result = redact_any(context(fake.text))
        assert_gone(result.text, fake)
        assert fake.kind in result.hits, (fake.kind, result.hits, result.text)
        assert set(result.hits) <= KINDS


def test_redacted_text_still_teaches() -> None:
    result = redact_text("psql postgres://app_user:S3cr3t!pw@db.example.com:5432/app -c '\\dt'")
    assert result.text == (
        "psql postgres://app_user:[REDACTED:url-credentials]@db.example.com:5432/app -c '\\dt'"
    )
    result = redact_text('curl -H "Authorization: Bearer abcDEF123456ghiJKL789" https://api.x.io')
    assert result.text == 'curl -H "Authorization: Bearer [REDACTED:bearer-token]" https://api.x.io'
    result = redact_text("https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFGH/abcdefghijKLMNOP12")
    assert result.text == "https://hooks.slack.com/services/[REDACTED:slack-webhook]"
    assert redact_text("export DB_PASSWORD=hunter2 && ./run").text == (
        "export DB_PASSWORD=[REDACTED:password] && ./run"
    )


def test_hits_follow_the_text_order() -> None:
    fakes = [f(random.Random(1)) for f in (github_token, jwt, aws_access_key, url_credentials)]
    result = redact_text(" then ".join(f.text for f in fakes))
    assert result.hits == ("github-token", "jwt", "aws-access-key", "url-credentials")


# ---------------------------------------------------------------------------------
# Private keys: whole blocks, in JSON, and when the output was cut off.
# ---------------------------------------------------------------------------------


def test_pem_block_goes_whole_and_text_after_it_stays() -> None:
    fake = pem_block(random.Random(7))
    result = redact_text(f"$ cat ~/.ssh/id_rsa\n{fake.text}\n$ echo done\ndone")
    assert result.text == "$ cat ~/.ssh/id_rsa\n[REDACTED:private-key]\n$ echo done\ndone"
    assert result.hits == ("private-key",)


def test_pem_block_inside_a_json_string() -> None:
    fake = pem_block(random.Random(8), "PRIVATE KEY")
    raw = json.dumps({"type": "service_account", "private_key": fake.text, "project": "demo"})
    result = redact_json(raw)
    assert json.loads(result.text) == {
        "type": "service_account",
        "private_key": "[REDACTED:private-key]",
        "project": "demo",
    }
    # The same document as plain text (escaped newlines) loses the block too.
    assert_gone(redact_text(raw).text, fake)


def test_truncated_pem_block_is_not_left_half_visible() -> None:
    fake = pem_block(random.Random(9))
    cut = fake.text[: len(fake.text) // 2]
    result = redact_text(f"{cut}... [output truncated]")
    assert result.text == "[REDACTED:private-key]... [output truncated]"
    assert_gone(
        result.text, Fake("half", cut, tuple(line for line in fake.material if line in cut), "")
    )


def test_certificate_is_not_a_private_key() -> None:
    body = base64.b64encode(random.Random(10).randbytes(96)).decode()
    result = redact_text(f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----")
    # Public, so its markers stay; a random-looking body line may still go as high-entropy.
    assert result.text.startswith("-----BEGIN CERTIFICATE-----\n")
    assert result.text.endswith("\n-----END CERTIFICATE-----")
    assert "private-key" not in result.hits


# ---------------------------------------------------------------------------------
# JSON documents.
# ---------------------------------------------------------------------------------


def test_secret_keys_in_json_are_withheld_whatever_the_value() -> None:
    raw = json.dumps(
        {
            "user": "mia_li_3668",
            "password": "correcthorsebatterystaple",
            "client_secret": "s3",
            "pin_password": 123456,
            "refreshToken": "opaque",
            "x-api-key": "abc",
            "headers": {"Authorization": "Basic ZGVwbG95OnMzY3IzdA==", "Accept": "*/*"},
            "max_tokens": 1000,
            "token_type": "bearer",
            "password_hint": "first pet",
            "credentials": {"username": "admin", "password": "pw1"},
            "is_secret": True,
            "api_key": None,
        }
    )
    result = redact_json(raw)
    assert json.loads(result.text) == {
        "user": "mia_li_3668",
        "password": "[REDACTED:password]",
        "client_secret": "[REDACTED:secret]",
        "pin_password": "[REDACTED:password]",
        "refreshToken": "[REDACTED:token]",
        "x-api-key": "[REDACTED:api-key]",
        "headers": {"Authorization": "Basic [REDACTED:basic-auth]", "Accept": "*/*"},
        "max_tokens": 1000,
        "token_type": "bearer",
        "password_hint": "first pet",
        "credentials": {"username": "admin", "password": "[REDACTED:password]"},
        "is_secret": True,
        "api_key": None,
    }
    assert "[REDACTED:password]" in result.text  # ensure_ascii=False, plain JSON


def test_json_inside_a_json_string_is_redacted_as_json() -> None:
    inner = json.dumps({"db": {"password": "hunter2", "host": "db.internal"}})
    result = redact_json(json.dumps({"tool": "read_file", "content": inner}))
    outer = json.loads(result.text)
    assert json.loads(outer["content"]) == {
        "db": {"password": "[REDACTED:password]", "host": "db.internal"}
    }
    assert result.hits == ("password",)


def test_redact_json_returns_untouched_input_byte_for_byte() -> None:
    raw = '{"a":1,  "b": [true, null],\n "c": "ünïcode"}'
    assert redact_json(raw) == Redaction(raw, ())


def test_redact_json_falls_back_to_text_when_it_does_not_parse() -> None:
    fake = github_token(random.Random(3))
    result = redact_json(f'{{"truncated": "{fake.text}')
    assert result.text == '{"truncated": "[REDACTED:github-token]'
    assert result.hits == ("github-token",)


def test_escaped_json_cannot_hide_a_secret() -> None:
    raw = '{"p\\u0061ssword": "hunter2", "dsn": "redis:\\/\\/:s3cretpw@cache:6379\\/0"}'
    result = json.loads(redact_json(raw).text)
    assert result == {
        "password": "[REDACTED:password]",
        "dsn": "redis://:[REDACTED:url-credentials]@cache:6379/0",
    }


def test_redact_value_handles_python_structures() -> None:
    fake = slack_token(random.Random(4))
    value, hits = redact_value({"items": [fake.text, ("ok", 1)], "api_keys": ["k1", "k2"]})
    assert value == {
        "items": ["[REDACTED:slack-token]", ("ok", 1)],
        "api_keys": ["[REDACTED:api-key]", "[REDACTED:api-key]"],
    }
    assert hits == ("slack-token", "api-key", "api-key")


def test_too_deep_a_structure_is_withheld_not_passed_through() -> None:
    deep: object = "ghp_" + "a1" * 18
    for _ in range(5000):
        deep = [deep]
    value, hits = redact_value(deep)
    assert value == "[REDACTED:unscannable]" and hits == ("unscannable",)
    raw = "[" * 100_000 + "]" * 100_000
    assert redact_json(raw).text == raw  # no candidate: returned as is, no recursion


# ---------------------------------------------------------------------------------
# False positives: ordinary tool output comes out unchanged.
# ---------------------------------------------------------------------------------

# Tool results and arguments copied from the τ-bench airline trajectories (MIT).
TAU_BENCH_AIRLINE = [
    '{"name": {"first_name": "Aarav", "last_name": "Ahmed"}, "address": {"address1": "176 Willow '
    'Lane", "address2": "Suite 431", "city": "Jacksonville", "country": "USA", "province": "FL", '
    '"zip": "32131"}, "email": "aarav.ahmed6812@example.com", "dob": "1981-05-26", '
    '"payment_methods": {"credit_card_9074831": {"source": "credit_card", "brand": "mastercard", '
    '"last_four": "7334", "id": "credit_card_9074831"}, "certificate_9645872": {"source": '
    '"certificate", "amount": 250, "id": "certificate_9645872"}, "credit_card_4959530": '
    '{"source": "credit_card", "brand": "mastercard", "last_four": "5018", "id": '
    '"credit_card_4959530"}}, "saved_passengers": [{"first_name": "Aarav", "last_name": "Patel", '
    '"dob": "1980-12-03"}], "membership": "silver", "reservations": ["M20IZO", "N6F783", '
    '"IFOYYZ", "NQNU5R"]}',
    '{"reservation_id": "V5EMZH", "user_id": "mohamed_hernandez_5188", "origin": "CLT", '
    '"destination": "BOS", "flight_type": "round_trip", "cabin": "basic_economy", "flights": '
    '[{"origin": "CLT", "destination": "BOS", "flight_number": "HAT064", "date": "2024-05-27", '
    '"price": 58}, {"origin": "BOS", "destination": "CLT", "flight_number": "HAT277", "date": '
    '"2024-05-29", "price": 80}], "passengers": [{"first_name": "Mohamed", "last_name": '
    '"Hernandez", "dob": "1996-10-16"}], "payment_history": [{"payment_id": '
    '"credit_card_5417084", "amount": 168}], "created_at": "2024-05-08T22:33:35", '
    '"total_baggages": 0, "nonfree_baggages": 0, "insurance": "yes"}',
    '[{"flight_number": "HAT208", "origin": "EWR", "destination": "MSP", '
    '"scheduled_departure_time_est": "00:00:00", "scheduled_arrival_time_est": "03:00:00", '
    '"status": "available", "available_seats": {"basic_economy": 16, "economy": 20, "business": '
    '4}, "prices": {"basic_economy": 76, "economy": 172, "business": 357}}]',
    '{"reservation_id": "I6M8JQ", "user_id": "amelia_davis_8890", "origin": "LAS", '
    '"destination": "EWR", "flight_type": "one_way", "cabin": "economy", "flights": [{"origin": '
    '"LAS", "destination": "MIA", "flight_number": "HAT115", "date": "2024-05-09", "price": 153}, '
    '{"origin": "MIA", "destination": "EWR", "flight_number": "HAT192", "date": "2024-05-09", '
    '"price": 193}], "passengers": [{"first_name": "Amelia", "last_name": "Davis", "dob": '
    '"1984-03-05"}, {"first_name": "Juan", "last_name": "Sanchez", "dob": "1972-06-04"}], '
    '"payment_history": [{"payment_id": "credit_card_5799376", "amount": 752}, {"payment_id": '
    '"credit_card_5799376", "amount": -752}], "created_at": "2024-05-08T14:58:17", '
    '"total_baggages": 0, "nonfree_baggages": 0, "insurance": "yes", "status": "cancelled"}',
    '{"SFO": "San Francisco", "JFK": "New York", "LAX": "Los Angeles", "ORD": "Chicago", "DFW": '
    '"Dallas", "DEN": "Denver", "SEA": "Seattle", "ATL": "Atlanta", "MIA": "Miami", "BOS": '
    '"Boston", "PHX": "Phoenix", "IAH": "Houston", "LAS": "Las Vegas", "MCO": "Orlando", "EWR": '
    '"Newark", "CLT": "Charlotte", "MSP": "Minneapolis", "DTW": "Detroit", "PHL": '
    '"Philadelphia", "LGA": "LaGuardia"}',
    "Certificate certificate_3221322 added to user noah_muller_9847 with amount 50.",
    "Error: payment amount does not add up, total price is 1002, but paid 1047",
    "Error: not enough balance in payment method gift_card_5094406",
    "Error: flight HAT030 not available on date 2024-05-13",
    "Error: certificate cannot be used to update reservation",
    "833.0",
    "Transfer successful",
    '{"user_id":"mia_li_3668"}',
    '{"origin":"JFK","destination":"SEA","date":"2024-05-20"}',
    '{"reservation_id":"YAX4DR","total_baggages":2,"nonfree_baggages":0,"payment_id":'
    '"credit_card_4938634"}',
    '{"user_id":"mia_li_3668","origin":"JFK","destination":"SEA","flight_type":"one_way",'
    '"cabin":"economy","flights":[{"flight_number":"HAT136","date":"2024-05-20"},'
    '{"flight_number":"HAT039","date":"2024-05-20"}],"passengers":[{"first_name":"Mia",'
    '"last_name":"Li","dob":"1990-04-05"}],"payment_methods":[{"payment_id":'
    '"certificate_7504069","amount":250},{"payment_id":"credit_card_4421486","amount":5}],'
    '"total_baggages":3,"nonfree_baggages":0,"insurance":"no"}',
    '{"thought":"The total cost for the selected flights in economy class is $255, but the '
    "system indicates the total price is $305. I need to recalculate the payment distribution "
    'to cover the total cost of $305."}',
    '{"summary":"User Omar Rossi needs to change the passenger name on reservation FQ8APE from '
    'Ivan Garcia to Omar Rossi, which is not possible through the automated system."}',
]

# What coding agents see all day; none of it is a secret.
CODING_OUTPUT = [
    "commit 3f2a9c1b4d5e6f708192a3b4c5d6e7f8091a2b3c\nAuthor: Mia Li <mia@example.com>\n"
    "Date:   Wed May 1 12:00:00 2024 +0000\n\n    Fix flaky test_redact_json_roundtrip",
    "Collecting numpy==2.4.6\n  Downloading numpy-2.4.6-cp311-cp311-manylinux_2_17_x86_64."
    "manylinux2014_x86_64.whl (16.4 MB)\nSuccessfully installed numpy-2.4.6",
    "tests/mining/test_select.py::test_coverage_prefers_new_tools PASSED [ 42%]\n"
    "===== 12 passed, 1 skipped in 3.21s =====",
    "drwxr-xr-x  5 root root 4096 May  1 12:00 .venv\n-rw-r--r--  1 root root  812 May  1"
    " 12:00 pyproject.toml\n/usr/lib/python3.11/site-packages/pydantic_core/_pydantic_core"
    ".cpython-311-x86_64-linux-gnu.so",
    "NAME                                READY   STATUS    RESTARTS   AGE\n"
    "api-deployment-7d9f8b6c5d-x2k4p     1/1     Running   0          3d",
    "request_id=550e8400-e29b-41d4-a716-446655440000 trace=4bf92f3577b34da6a3ce929d0e0e4736",
    'Traceback (most recent call last):\n  File "/srv/app/main.py", line 3, in <module>\n'
    "    from warmstart.mining.redact import redact_text\nModuleNotFoundError: No module",
    "def login(user: str, password: str) -> Session:\n    password = getpass.getpass()\n"
    "    token = get_token(user, password)\n    self.api_key = settings.api_key\n",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "Usage: tool [OPTIONS]\n  --password TEXT   read from $DB_PASSWORD\n  --token-file PATH",
    "model=gpt-4o-2024-08-06 prompt_tokens=1532 completion_tokens=211 max_tokens=4096",
    "ReservationDetailsResponse AbstractSingletonProxyFactoryBean test_high_entropy_ids",
    '{"pwd": "/home/mia/project", "cwd": "/home/mia/project", "env": {"PATH": "/usr/bin"}}',
    "PWD=/home/mia/project\nOLDPWD=/home/mia",
    "The bearer of this ticket may board. Basic economy fares are non-refundable.",
]


@pytest.mark.parametrize("text", TAU_BENCH_AIRLINE + CODING_OUTPUT)
def test_ordinary_tool_output_is_unchanged(text: str) -> None:
    assert redact_text(text) == Redaction(text, ())
    assert redact_json(text) == Redaction(text, ())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Literal values go; code, templates, types, prose and metavars stay.
        ("PASSWORD=hunter2 ./run", "PASSWORD=[REDACTED:password] ./run"),
        ("password: 's3cr3t!'", "password: '[REDACTED:password]'"),
        ('client_secret = "abc"', 'client_secret = "[REDACTED:secret]"'),
        ("--api-key sk_test_value1", "--api-key [REDACTED:api-key]"),
        (
            "curl 'https://x.io/v1?access_token=tok123&page=2'",
            "curl 'https://x.io/v1?access_token=[REDACTED:token]&page=2'",
        ),
        (
            "def connect(password: str = 'hunter2'):",
            "def connect(password: str = '[REDACTED:password]'):",
        ),
        (
            "Cookie: sessionid=abc123; theme=dark",
            "Cookie: sessionid=[REDACTED:cookie]; theme=[REDACTED:cookie]",
        ),
        (
            "Set-Cookie: sid=31d4d96e407aad42; Path=/; HttpOnly",
            "Set-Cookie: sid=[REDACTED:cookie]; Path=/; HttpOnly",
        ),
        (
            "//registry.npmjs.org/:_authToken=npm_abcdef123",
            "//registry.npmjs.org/:_authToken=[REDACTED:npm-token]",
        ),
        ("password = os.environ['DB_PASSWORD']", None),
        ("token = get_token(user, password)", None),
        ("api_key: str | None = None", None),
        ("api_key: ApiKey | None,", None),
        ('auth = "{}:{}".format(user, password)', None),
        ("url = f'{scheme}://{user}:{password}@{host}'", None),
        ("token: The refresh token to exchange.", None),
        ("--password TEXT  The password [env: DB_PASSWORD]", None),
        ("password=<your-password> token=${TOKEN} secret={{ secret }}", None),
        ("password: ******** token: xxxxxxxx", None),
        ("refresh(token=refresh_token, force=False)", None),
        ("max_tokens=4096 token_type=bearer password_reset_url=/reset", None),
        ("bypass=true compass: north oauth: enabled", None),
    ],
)
def test_assignments(text: str, expected: str | None) -> None:
    assert redact_text(text).text == (text if expected is None else expected)


def test_url_encoded_token_goes_whole() -> None:
    result = redact_text('oauth_signature="wOJIO9A2W5mFwDgiDvZbTSMK%2FPY%3D", page=2')
    assert result.text == 'oauth_signature="[REDACTED:high-entropy]", page=2'


def test_high_entropy_spares_identifiers_paths_and_ids() -> None:
    text = (
        "MySQLCompiler_mysqldb Draft202012Validator getUserDetailsByIdAndName2 "
        "https://github.com/python/cpython/blob/3f2a9c1b4d5e6f708192a3b4c5d6e7f8091a2b3c/Mod.c "
        "my-app-deployment-7d9f8b6c5d-x2k4p 507f1f77bcf86cd799439011 2024-05-11T08:28:51.123Z"
    )
    assert redact_text(text) == Redaction(text, ())
    assert redact_text("key Xk9fLpQ2vB7nM3zR8tW1yH6jD4sA0cE5 end").hits == ("high-entropy",)


def test_bare_unlabelled_hex_of_key_length_is_redacted() -> None:
    digest = "3f2a9c1b4d5e6f708192a3b4c5d6e7f8091a2b3c"
    assert redact_text(f"commit {digest}").hits == ()
    assert redact_text(f"token is {digest}").hits == ("high-entropy",)


# ---------------------------------------------------------------------------------
# detect-secrets as the second net.
# ---------------------------------------------------------------------------------

DETECT_SECRETS_SAMPLES = {
    "stripe-access-key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "gitlab-token": "glpat-" + "xY9zAbC3dEfGhIjK1mNo",
    "sendgrid-api-key": "SG."
    + "aB3dEfGhIjKlMnOpQrStUv"
    + "."
    + "wXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ012",
    "pypi-token": "pypi-AgEIcHlwaS5vcmc" + "Q" * 30 + "a1B2c3D4e5" * 5,
    "square-oauth-secret": "sq0csp-" + "aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2yZ3aB4c",
    "azure-storage-account-access-key": "AccountKey=" + "aB1+cD2/eF3" * 8,
    "twilio-api-key": "SK" + "0123456789abcdef0123456789abcdef",
    "mailchimp-access-key": "0123456789abcdef0123456789abcdef-us12",
    "telegram-bot-token": "123456789:" + "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw9",
    "ibm-cloud-iam-key": 'ibm_cloud_iam_api_key: "'
    + "aB1-cD2_eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2yZ3aB4c"
    + '"',
}


@pytest.mark.parametrize(("kind", "sample"), DETECT_SECRETS_SAMPLES.items())
def test_detect_secrets_formats_are_caught(kind: str, sample: str) -> None:
    result = redact_text(f"value={sample} ; echo ok")
    secret = sample.split("=", 1)[-1].split('"')[-2] if '"' in sample else sample
    assert secret not in result.text
    assert result.hits and result.text.endswith(" ; echo ok")


def test_detect_secrets_plugins_keep_the_kinds_we_document() -> None:
    import importlib

    for module, (cls_name, kind, _) in redact._DETECT_SECRETS_PLUGINS.items():
        cls = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), cls_name)
        assert redact._kind_of(cls.secret_type) == kind


def test_detect_secrets_never_phones_home(monkeypatch: pytest.MonkeyPatch) -> None:
    import requests

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a secret was about to leave the machine")

    monkeypatch.setattr(requests.sessions.Session, "request", refuse)
    for factory in (slack_token, slack_webhook, aws_access_key, github_token):
        fake = factory(random.Random(5))
        assert_gone(redact_text(fake.text).text, fake)


# ---------------------------------------------------------------------------------
# Robustness: hostile input, placeholders, failure.
# ---------------------------------------------------------------------------------


def test_look_alike_placeholder_is_no_hiding_place() -> None:
    hidden = "[REDACTED:3f2a9c1b4d5e6f708192a3b4c5d6e7f8091a2b3c]"
    assert redact_text(f"token {hidden}").text == "token [REDACTED:[REDACTED:high-entropy]]"


def test_failure_withholds_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_: object) -> list[object]:
        raise ValueError("boom")

    monkeypatch.setattr(redact, "_OWN_DETECTORS", (broken,))
    assert redact_text("password=hunter2") == Redaction("[REDACTED:unscannable]", ("unscannable",))
    assert redact_text("nothing to see") == Redaction("nothing to see", ())


@pytest.mark.parametrize(
    "text",
    [
        "\x00" * 10_000 + "password=\x00hunter2",
        "\ud800\udfff password=\ud800 sk-ant-\udc00" * 100,
        "İpassword=İİİ AKIAİ" * 100,
        "password:" * 10_000,
        "eyJ" * 50_000,
        "-----BEGIN RSA PRIVATE KEY-----" * 5_000,
        "a://:" * 50_000,
        '"' * 100_000 + "==password",
    ],
    ids=[
        "nul",
        "surrogates",
        "dotted-I",
        "keywords",
        "jwt-prefix",
        "pem-headers",
        "urls",
        "quotes",
    ],
)
def test_hostile_strings(text: str) -> None:
    start = time.perf_counter()
    result = redact_text(text)
    assert redact_text(result.text).text == result.text
    json_result = redact_json(text)
    assert isinstance(json_result.text, str)
    assert time.perf_counter() - start < 10


def test_huge_string_is_linear_enough() -> None:
    rng = random.Random(11)
    words = " ".join(
        rng.choice(["reservation", "flight", "HAT136", "2024-05-20"]) for _ in range(50_000)
    )
    fake = github_token(rng)
    text = words + f" {fake.text} " + words
    start = time.perf_counter()
    result = redact_text(text)
    assert time.perf_counter() - start < 5
    assert_gone(result.text, fake)
    assert result.hits == ("github-token",)


# ---------------------------------------------------------------------------------
# Properties.
# ---------------------------------------------------------------------------------

FRAGMENTS = [
    "password=", "api_key: ", '"secret": "', "Authorization: Bearer ", "Basic ", "://", "u:p@",
    "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "eyJ", ".", "sk-",
    "sk-ant-", "ghp_", "AKIA", "xoxb-", "[REDACTED:", "[REDACTED:jwt]", "]", "\\", '"', "'",
    "\n", " ", "=", ":", "Cookie: a=", "aws_secret_access_key", "\\u0041", "{", "}", "[", ",",
]  # fmt: skip
any_char = st.characters(exclude_categories=())
hostile_text = st.one_of(
    st.text(any_char, max_size=300),
    st.lists(
        st.one_of(
            st.sampled_from(FRAGMENTS),
            st.text(any_char, max_size=12),
            st.text(ALNUM, min_size=16, max_size=48),
        ),
        max_size=40,
    ).map("".join),
)
fast = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fast
@given(hostile_text)
def test_never_raises_and_is_idempotent(text: str) -> None:
    once = redact_text(text)
    assert isinstance(once.text, str) and set(once.hits) <= KINDS
    again = redact_text(once.text)
    assert again == Redaction(once.text, ())
    json_once = redact_json(text)
    assert redact_json(json_once.text).text == json_once.text


PROSE = st.text(string.ascii_letters + string.digits + " \n\t.,:;()-_/'\"{}[]=", max_size=200)
DELIMITERS = st.sampled_from(["", " ", "\n", "\t", '"', "'", "(", ")", ",", ": ", "= ", " | "])


@fast
@given(
    prose=PROSE,
    factory=st.sampled_from(FACTORIES),
    seed=st.integers(0, 2**32),
    at=st.integers(0, 200),
    left=DELIMITERS,
    right=DELIMITERS,
)
def test_a_secret_anywhere_in_random_text_is_removed(
    prose: str,
    factory: Callable[[random.Random], Fake],
    seed: int,
    at: int,
    left: str,
    right: str,
) -> None:
    fake = factory(random.Random(seed))
    at = min(at, len(prose))
    text = prose[:at] + left + fake.text + right + prose[at:]
    assert_gone(redact_text(text).text, fake)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(any_char, max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["password", "token", "name", "data", "Authorization"])
            | st.text(max_size=8),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@fast
@given(value=json_values, factory=st.sampled_from(FACTORIES), seed=st.integers(0, 2**32))
def test_redact_json_output_always_parses(
    value: object, factory: Callable[[random.Random], Fake], seed: int
) -> None:
    fake = factory(random.Random(seed))
    raw = json.dumps({"payload": value, "note": f"see {fake.text}"}, ensure_ascii=bool(seed % 2))
    result = redact_json(raw)
    parsed = json.loads(result.text)
    assert_gone(result.text, fake)
    assert redact_json(result.text).text == result.text
    assert isinstance(parsed, dict)
