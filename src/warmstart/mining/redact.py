"""Secret redaction: nothing mined from a session leaves the machine unredacted.

Every string that becomes part of an example (tool-call arguments, tool results,
intents, error samples) passes through :func:`redact_text` or :func:`redact_json`.
A secret is replaced by ``[REDACTED:<kind>]``; the text around it is kept, so an
example still teaches (``postgres://app:[REDACTED:url-credentials]@db:5432/app``).

How a call runs, and why:

1. **Pre-filter.** Substring checks for a trigger (a secret-ish word, ``://``,
   ``BEGIN``, a token prefix) and a scan for token-like runs of 20+ characters with
   digits or mixed case. Most tool results have neither and return untouched
   without running any detector: templates redact thousands of examples.
2. **Our detectors** find exact spans for the formats we know well (PEM blocks,
   URL credentials, Authorization and Cookie headers, AWS, GitHub, OpenAI,
   Anthropic and Slack tokens, JWTs, ``password=``-style assignments, high-entropy
   runs). They decide what is kept, e.g. a URL's scheme and host. Each is gated by
   a substring check, and keyword rules run only around the keyword, because a
   case-insensitive alternation scanned over a whole text is slow in ``re``.
3. **detect-secrets as a safety net.** The regexes of detect-secrets' format
   plugins (Stripe, GitLab, PyPI, SendGrid, Twilio, ...) and its quoted-keyword
   rules then run over the already-redacted text. We use the plugins' compiled
   ``denylist`` patterns directly rather than ``scan_line``/``analyze_line``: those
   mutate process-wide settings (not thread-safe), run filters meant for source
   files, return secret *values* rather than spans, and would call the plugin's
   ``verify()`` (an HTTP request carrying the secret) if any caller in the process
   enabled the verification filter. Here a secret never leaves the process.
4. Overlapping spans are merged (so no secret survives in part) and the most
   specific kind names the placeholder. Passes repeat until nothing is found, so
   redacting redacted text changes nothing.

The redactor fails closed: if anything unexpected goes wrong, the whole text is
replaced by ``[REDACTED:unscannable]`` rather than passed through.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple
from urllib.parse import unquote

__all__ = ["KINDS", "Redaction", "redact_json", "redact_text", "redact_value"]


@dataclass(frozen=True)
class Redaction:
    """The result of redacting one text."""

    text: str
    """The redacted text."""
    hits: tuple[str, ...]
    """One kind per placeholder inserted, in the order they appear in :attr:`text`."""


class _Span(NamedTuple):
    start: int
    end: int
    kind: str
    rank: int  # the most specific (highest rank) kind names a merged span


class _Text:
    """A text and its lower-case twin, position for position.

    Case-insensitive rules run case-sensitively on ``lower`` (much faster in ``re``)
    and read values back from ``raw`` at the same offsets. ``str.lower`` keeps the
    length of every character except U+0130, which is folded first.
    """

    __slots__ = ("_runs", "lower", "raw")

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self.lower = (raw.replace("\u0130", "i") if "\u0130" in raw else raw).lower()
        self._runs: list[re.Match[str]] | None = None

    @property
    def runs(self) -> list[re.Match[str]]:
        """Token-like runs of 20+ characters (computed once: several rules need them)."""
        if self._runs is None:
            self._runs = list(_RUN.finditer(self.raw))
        return self._runs

    def has_run(self, length: int) -> bool:
        """A token-like run at least ``length`` characters long."""
        return any(m.end() - m.start() >= length for m in self.runs)

    def has(self, *needles: str) -> bool:
        """Any of ``needles`` (lower case) occurs, whatever its case in the text."""
        return any(n in self.lower for n in needles)

    def has_cased(self, *needles: str) -> bool:
        """Any of ``needles`` occurs exactly."""
        return any(n in self.raw for n in needles)


# Ranks: a span found by several detectors is named by its most specific detector.
_FORMAT_RANKS: dict[str, int] = {
    "private-key": 100,
    "anthropic-key": 95,
    "github-token": 90,
    "aws-access-key": 90,
    "slack-token": 90,
    "slack-webhook": 90,
    "npm-token": 90,
    "openai-key": 85,
    "aws-secret-key": 85,
    "jwt": 80,
    "url-credentials": 70,
    "basic-auth": 60,
    "bearer-token": 60,
    "cookie": 55,
    "password": 50,
    "secret": 50,
    "api-key": 50,
    "token": 50,
    "credentials": 50,
    "high-entropy": 10,
}
_DETECT_SECRETS_RANK = 40
_UNSCANNABLE = "unscannable"
_KEYWORD_KIND = "secret-keyword"


def _needs(*lower: str, cased: tuple[str, ...] = ()) -> Callable[[_Text], bool]:
    """A gate: the text contains one of these words (any case) or exact strings."""
    return lambda t: t.has(*lower) or t.has_cased(*cased)


_ARTIFACTORY_HINT = re.compile(r"AKC|AP[0-9A-F]")
_KEY_WORDS = ("key", "pw", "pass", "token")

# detect-secrets plugins we run: module -> (class, kind, gate). The gate is a
# necessary condition for the plugin's patterns to match (read off its regexes), so
# a text without it skips the plugin. Left out: IPPublicDetector (an IP address is
# not a credential, and hiding it would gut network examples), JwtTokenDetector and
# NpmDetector (their unanchored ``[...]+`` / ``.+`` patterns go quadratic on hostile
# input; our own jwt and npm-token rules cover the same formats and more).
_DETECT_SECRETS_PLUGINS: dict[str, tuple[str, str, Callable[[_Text], bool]]] = {
    "artifactory": (
        "ArtifactoryDetector",
        "artifactory-credentials",
        lambda t: _ARTIFACTORY_HINT.search(t.raw) is not None,
    ),
    "aws": (
        "AWSKeyDetector",
        "aws-access-key",
        _needs("aws", cased=("AKIA", "ASIA", "ABIA", "ACCA", "A3T")),
    ),
    "azure_storage_key": (
        "AzureStorageKeyDetector",
        "azure-storage-account-access-key",
        _needs(cased=("AccountKey=",)),
    ),
    "basic_auth": ("BasicAuthDetector", "url-credentials", _needs("://")),
    "cloudant": (
        "CloudantDetector",
        "cloudant-credentials",
        lambda t: t.has("cloudant") or (t.has("cl") and t.has(*_KEY_WORDS)),
    ),
    "discord": ("DiscordBotTokenDetector", "discord-bot-token", lambda t: t.has_run(27)),
    "github_token": (
        "GitHubTokenDetector",
        "github-token",
        _needs(cased=("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    ),
    "gitlab_token": ("GitLabTokenDetector", "gitlab-token", _needs(cased=("gl", "GR1348941"))),
    "ibm_cloud_iam": ("IbmCloudIamDetector", "ibm-cloud-iam-key", _needs(*_KEY_WORDS)),
    "ibm_cos_hmac": ("IbmCosHmacDetector", "ibm-cos-hmac-credentials", _needs("secret")),
    "mailchimp": ("MailchimpDetector", "mailchimp-access-key", _needs(cased=("-us",))),
    "openai": ("OpenAIDetector", "openai-key", _needs(cased=("T3BlbkFJ",))),
    "private_key": ("PrivateKeyDetector", "private-key", _needs(cased=("PRIVATE KEY", "PuTTY"))),
    "pypi_token": ("PypiTokenDetector", "pypi-token", _needs(cased=("pypi-",))),
    "sendgrid": ("SendGridDetector", "sendgrid-api-key", _needs(cased=("SG.",))),
    "slack": ("SlackDetector", "slack-token", _needs("xox", "hooks.slack.com")),
    "softlayer": (
        "SoftlayerDetector",
        "softlayer-credentials",
        lambda t: t.has("softlayer") or (t.has("sl") and t.has(*_KEY_WORDS)),
    ),
    "square_oauth": ("SquareOAuthDetector", "square-oauth-secret", _needs(cased=("sq0csp-",))),
    "stripe": ("StripeDetector", "stripe-access-key", _needs(cased=("k_live_",))),
    "telegram_token": ("TelegramBotTokenDetector", "telegram-bot-token", lambda t: t.has_run(35)),
    "twilio": (
        "TwilioKeyDetector",
        "twilio-api-key",
        lambda t: t.has_cased("AC", "SK") and t.has_run(34),
    ),
}
# detect-secrets secret_type -> our kind, where we already have a name for it.
_DETECT_SECRETS_ALIASES: dict[str, str] = {
    "AWS Access Key": "aws-access-key",
    "Basic Auth Credentials": "url-credentials",
    "GitHub Token": "github-token",
    "JSON Web Token": "jwt",
    "NPM tokens": "npm-token",
    "OpenAI Token": "openai-key",
    "Private Key": "private-key",
    "Slack Token": "slack-token",
}

KINDS: frozenset[str] = frozenset(
    {*_FORMAT_RANKS, *(kind for _, kind, _ in _DETECT_SECRETS_PLUGINS.values())}
    | {_KEYWORD_KIND, _UNSCANNABLE}
)
"""Every kind a placeholder can name."""


def _kind_of(secret_type: str) -> str:
    """Normalise a detect-secrets ``secret_type`` (``'Stripe Access Key'``) to a kind."""
    return _DETECT_SECRETS_ALIASES.get(secret_type) or re.sub(
        r"[^a-z0-9]+", "-", secret_type.lower()
    ).strip("-")


def _placeholder(kind: str) -> str:
    return f"[REDACTED:{kind}]"


# Only placeholders naming a kind we emit are opaque: a look-alike such as
# "[REDACTED:<40 hex chars>]" must not become a hiding place for a secret.
_PLACEHOLDER = re.compile(
    r"\[REDACTED:(?:" + "|".join(sorted(map(re.escape, KINDS), key=len, reverse=True)) + r")\]"
)
_PLACEHOLDER_KIND = re.compile(r"\[REDACTED:([a-z0-9-]+)\]")

# ---------------------------------------------------------------------------------
# Pre-filter: what any rule (ours or detect-secrets') needs in a text to match.
# ---------------------------------------------------------------------------------

_TRIGGER_WORDS = (
    "pwd", "pw", "secret", "token", "key", "auth", "bearer", "credential", "contrase",
    "cookie", "session", "aws", "xox", "xapp-", "sk-", "k_live_", "ghp_", "gho_", "ghu_",
    "ghs_", "ghr_", "github_pat_", "://", "hooks.slack.com",
)  # fmt: skip
# Mailchimp's "-us1" suffix is left to the run check: "-us" is in every "--user".
_TRIGGER_CASED = (
    "-BEGIN", "- BEGIN", "PuTTY", "eyJ", "AKIA", "ASIA", "ABIA", "ACCA", "A3T", "SG.", "sq0csp",
    "GR1348941", "Basic ", "Basic\t", "pypi-", "glpat-", "gldt-", "glft-", "glsoat-", "glrt-",
    "glcbt-", "glimt-", "glptt-", "glagent-", "gloas-",
)  # fmt: skip
# '=' only as padding, so KEY=value splits into two runs; '%' keeps a URL-encoded
# token (sig=ab%2Bcd...) in one run.
_RUN = re.compile(r"[A-Za-z0-9+/_\-%]{20,}=*")


_DIGIT = re.compile(r"[0-9]")
_UPPER = re.compile(r"[A-Z]")
_LOWER = re.compile(r"[a-z]")


def _mixed(s: str) -> bool:
    """Digits, or both cases: what a random token of 20+ characters almost surely has."""
    return bool(_DIGIT.search(s) or (_UPPER.search(s) and _LOWER.search(s)))


def _may_contain_secret(t: _Text) -> bool:
    """Cheap check that lets plain text skip every detector.

    Every rule with a keyword or a literal prefix has it in the trigger lists; the
    rest (high entropy, and detect-secrets' prefix-less Discord, Telegram and Twilio
    formats, which are random runs too) need a run the high-entropy rule flags.
    """
    if t.has(*_TRIGGER_WORDS) or t.has_cased(*_TRIGGER_CASED):
        return True
    # "pass" anywhere but in "passenger(s)", which every airline reservation has.
    if t.lower.count("pass") > t.lower.count("passeng"):
        return True
    if _ARTIFACTORY_HINT.search(t.raw):
        return True
    return any(next(_run_spans(t, m), None) is not None for m in t.runs)


# ---------------------------------------------------------------------------------
# Values that are not secrets even where a secret is expected.
# ---------------------------------------------------------------------------------

_BENIGN_VALUE = re.compile(
    r"""(?ix)
    (?: <[^<>]*> | \$\{?[A-Za-z_][A-Za-z0-9_]*\}? | \{\{.*\}\} | \$\(.*\)
      | your[-_][\w-]+ | [\w-]+[-_]here | \#[0-9a-f]{3,8}
      | [*x•.#_-]+
      # only format fields and punctuation: "{user}:{password}", "%s:%s", "{}"
      | (?: \{ (?:[A-Za-z_][\w.\[\]'"]*)? (?:![rsa])? (?::[^{}]*)? \}
          | %(?:\([A-Za-z_]+\))?[-\#0 +]*\d*[sdrf] | [^\w{}%] )+ )
    """
)
# Literals, type names and the metavars of --help texts (--password TEXT).
_BENIGN_WORDS = frozenset(
    {
        "null", "none", "nil", "true", "false", "undefined", "yes", "no", "redacted", "hidden",
        "masked", "str", "int", "bytes", "bool", "float", "string", "number", "boolean", "any",
        "object", "optional", "secretstr", "secretbytes", "dict", "list", "char", "void", "text",
        "value", "path", "file", "filename", "integer", "password", "passwd", "token", "secret",
        "key", "apikey", "api_key", "credentials",
    }
)  # fmt: skip
# An identifier path or a call (settings.api_key, os.environ["X"], get_token(user, ...)):
# code. A shell value cannot hold an unquoted "(", so this hides no password.
_CODE_REFERENCE = re.compile(
    r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*[(\[].*|[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_]\w*)+",
    re.DOTALL,
)


def _is_benign(value: str, key_word: str = "") -> bool:
    """A value that is empty, masked, templated, a type name or a code reference."""
    v = value.strip()
    if not v or not any(c.isalnum() for c in v) or _PLACEHOLDER.fullmatch(v):
        return True
    if _BENIGN_VALUE.fullmatch(v) or v.lower() in _BENIGN_WORDS or _CODE_REFERENCE.fullmatch(v):
        return True
    # password=password, token=self_token: a variable passed along, not a literal.
    return bool(key_word) and v.isidentifier() and key_word.lower() in v.lower()


def _tokenish(s: str) -> bool:
    """Looks like a credential rather than a word: 8+ chars with digits or mixed case."""
    return len(s) >= 8 and _mixed(s)


# ---------------------------------------------------------------------------------
# Our detectors. Each yields exact spans of secret material.
# ---------------------------------------------------------------------------------

Detector = Callable[[_Text], Iterable[_Span]]


def _span(m: re.Match[str], kind: str, group: int | str = 0) -> _Span:
    return _Span(m.start(group), m.end(group), kind, _FORMAT_RANKS[kind])


_PEM_BEGIN = re.compile(
    r"-{3,}[ \t]?BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?[ \t]?-{3,}|PuTTY-User-Key-File-\d+:"
)
_PEM_END = re.compile(
    r"-{3,}[ \t]?END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?[ \t]?-{3,}|Private-MAC:[ \t]*[0-9A-Fa-f]+"
)
# Everything a key body can contain (base64, PEM headers such as "Proc-Type: 4,ENCRYPTED",
# escaped newlines); a block without END is redacted as far as this reaches.
_PEM_BODY = re.compile(r"(?:[A-Za-z0-9+/=:,\- \t\r\n]|\\[nrt])*")


def _private_keys(t: _Text) -> Iterator[_Span]:
    """Whole PEM/OpenSSH/PGP/PuTTY private key blocks, BEGIN to END (or as far as a body goes)."""
    if not t.has_cased("BEGIN", "PuTTY-User-Key-File"):
        return
    text, pos = t.raw, 0
    while (begin := _PEM_BEGIN.search(text, pos)) is not None:
        end = _PEM_END.search(text, begin.end())
        if end is not None:
            stop = end.end()
        else:
            body = _PEM_BODY.match(text, begin.end())
            stop = body.end() if body else begin.end()
            while stop > begin.end() and text[stop - 1] in " \t\r\n":
                stop -= 1
        yield _Span(begin.start(), stop, "private-key", _FORMAT_RANKS["private-key"])
        pos = stop


_URL_CREDENTIALS = re.compile(r"://[^\s:/?#@\[\]\"'<>]*:(?P<pw>[^\s/?#\"'<>]+)@")


def _url_credentials(t: _Text) -> Iterator[_Span]:
    """The password in ``scheme://user:password@host``; scheme, user and host stay."""
    if not ("://" in t.raw and "@" in t.raw):
        return
    for m in _URL_CREDENTIALS.finditer(t.raw):
        if not _is_benign(m.group("pw")):
            yield _span(m, "url-credentials", "pw")


# Run on the lower-case twin; credentials are read back from the raw text.
_AUTH_HEADER = re.compile(
    r"\b(?:proxy-)?authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?[ \t]*"
    r"(?:(?P<scheme>bearer|basic|token|bot|digest|negotiate|ntlm|apikey|api-key|sso-key|otp)"
    r"[ \t]+)?(?P<cred>[^\s\"'\\,;]+)"
)
_BEARER = re.compile(r"\bbearer[ \t]+(?P<cred>[a-z0-9\-._~+/]{8,}=*)")
_BASIC = re.compile(r"\bBasic[ \t]+(?P<cred>[A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])")


def _is_basic_credentials(value: str) -> bool:
    """Base64 of ``user:password``, the payload of HTTP Basic auth."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    text = decoded.decode("utf-8", "replace")
    return ":" in text and text.isprintable()


def _auth_headers(t: _Text) -> Iterator[_Span]:
    """Authorization header values (scheme kept), loose ``Bearer x`` and ``Basic x``."""
    if "authorization" in t.lower:
        for m in _AUTH_HEADER.finditer(t.lower):
            cred = t.raw[m.start("cred") : m.end("cred")]
            # Without a scheme the value must look like a token ("authorization: required",
            # or f"Bearer {token}" in code, are not credentials).
            if (m.group("scheme") or _tokenish(cred)) and not _is_benign(cred):
                kind = "basic-auth" if m.group("scheme") == "basic" else "bearer-token"
                yield _span(m, kind, "cred")
    if "bearer" in t.lower:
        for m in _BEARER.finditer(t.lower):
            cred = t.raw[m.start("cred") : m.end("cred")]
            if _tokenish(cred) and not _is_benign(cred):
                yield _span(m, "bearer-token", "cred")
    if "Basic" in t.raw:
        for m in _BASIC.finditer(t.raw):
            if _is_basic_credentials(m.group("cred")):
                yield _span(m, "basic-auth", "cred")


_COOKIE_HEADER = re.compile(
    r"\b(?:set-cookie|cookie)\\?[\"']?[ \t]*:[ \t]*\\?[\"']?(?P<val>[^\r\n\"'\\]*)"
)
_COOKIE_PAIR = re.compile(r"(?P<k>[^=;,\s]+)=(?P<v>[^;,\s]*)")
_COOKIE_ATTRIBUTES = frozenset(
    {"path", "expires", "max-age", "domain", "samesite", "secure",
     "httponly", "priority", "partitioned", "version"}
)  # fmt: skip


def _cookies(t: _Text) -> Iterator[_Span]:
    """Cookie values in ``Cookie:`` / ``Set-Cookie:`` headers (names and attributes stay)."""
    if "cookie" not in t.lower:
        return
    for m in _COOKIE_HEADER.finditer(t.lower):
        offset = m.start("val")
        for pair in _COOKIE_PAIR.finditer(t.raw, offset, m.end("val")):
            if pair.group("k").lower() in _COOKIE_ATTRIBUTES or _is_benign(pair.group("v")):
                continue
            yield _span(pair, "cookie", "v")


class _Format(NamedTuple):
    pattern: re.Pattern[str]
    kind: str
    gate: Callable[[_Text], bool]
    on_lower: bool = False  # match the lower-case twin (a case-insensitive format)
    group: int | str = 0


_TOKEN_FORMATS: tuple[_Format, ...] = (
    _Format(
        re.compile(r"(?<![A-Z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])"),
        "aws-access-key",
        _needs(cased=("AKIA", "ASIA", "ABIA", "ACCA", "A3T")),
    ),
    _Format(
        re.compile(r"gh[pousr]_[A-Za-z0-9_]{30,}|github_pat_[A-Za-z0-9_]{22,}"),
        "github-token",
        _needs(cased=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    ),
    _Format(re.compile(r"sk-ant-[A-Za-z0-9_\-]{20,}"), "anthropic-key", _needs(cased=("sk-ant-",))),
    _Format(re.compile(r"sk-(?!ant-)[A-Za-z0-9_\-]{20,}"), "openai-key", _needs(cased=("sk-",))),
    _Format(
        re.compile(r"xox[abposre]-[A-Za-z0-9\-]{8,}|xapp-\d+-[A-Za-z0-9\-]{10,}"),
        "slack-token",
        _needs(cased=("xox", "xapp-")),
    ),
    _Format(
        re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<path>[a-z0-9_/\-]+)"),
        "slack-webhook",
        _needs("hooks.slack.com"),
        on_lower=True,
        group="path",
    ),
    _Format(
        re.compile(
            r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{4,}={0,2}\.[A-Za-z0-9_\-]{2,}={0,2}"
            r"(?:\.[A-Za-z0-9_\-+/=]+)*"
        ),
        "jwt",
        _needs(cased=("eyJ",)),
    ),
    # .npmrc: //registry.npmjs.org/:_authToken=..., _auth=..., _password=...
    _Format(
        re.compile(r"(?<![a-z0-9])_(?:authtoken|auth|password)[ \t]*=[ \t]*(?P<v>[^\s\"']+)"),
        "npm-token",
        _needs("_auth", "_password"),
        on_lower=True,
        group="v",
    ),
    _Format(
        re.compile(
            r"aws.{0,30}?(?:secret|key).{0,30}?(?<![a-z0-9/+])(?P<s>[a-z0-9/+]{40})(?![a-z0-9/+=])"
        ),
        "aws-secret-key",
        _needs("aws"),
        on_lower=True,
        group="s",
    ),
    _Format(
        re.compile(
            r"secret_?access_?key\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?(?P<s>[a-z0-9/+]{40})"
            r"(?![a-z0-9/+=])"
        ),
        "aws-secret-key",
        _needs("secretaccesskey", "secret_access_key", "secret_accesskey", "secretaccess_key"),
        on_lower=True,
        group="s",
    ),
)


def _token_formats(t: _Text) -> Iterator[_Span]:
    """Provider tokens recognisable by prefix and shape, and AWS secret keys by context."""
    for fmt in _TOKEN_FORMATS:
        if not fmt.gate(t):
            continue
        for m in fmt.pattern.finditer(t.lower if fmt.on_lower else t.raw):
            start, end = m.span(fmt.group)
            value = t.raw[start:end]
            if fmt.kind == "openai-key" and (
                (start > 0 and t.raw[start - 1].isalnum()) or not _mixed(value[3:])
            ):
                continue  # "task-1234..." or "sk-some-long-hyphenated-name": not a key
            if fmt.kind == "aws-secret-key" and not _mixed(value):
                continue
            if fmt.kind == "npm-token" and _is_benign(value):
                continue
            yield _Span(start, end, fmt.kind, _FORMAT_RANKS[fmt.kind])


# --- assignments ---------------------------------------------------------------------

# Key names that hold secrets. A key matches when it *ends* in one of these words
# (DB_PASSWORD, client_secret, x-api-key, refreshToken), so max_tokens, token_type
# and password_reset_url do not.
_SECRET_WORD = (
    r"(?:password|passwd|passphrase|pass|pwd|secret|token|credentials?|auth|api[-_.]?keys?"
    r"|apikeys?|(?:access|auth|private|secret|client|account|signing|encryption|master"
    r"|service|db|database|priv|license|subscription|session)[-_.]?keys?"
    r"|session[-_.]?id|(?:db|database|key)[-_.]?pass|contrase[ñn]a)"
    # password_confirmation, token_value, password_hash: still the secret (or crackable).
    r"(?:[-_.]?(?:confirmation|confirm|again|repeat|hash|digest|plain|plaintext|value|b64))?"
    r"\d*"
)
# Where a keyword can sit inside a key; every _SECRET_WORD contains one of these.
_STEM = re.compile(r"pass|pwd|secret|token|credential|auth|key|session|contrase")
_KEY_KINDS: tuple[tuple[str, str], ...] = (
    ("private", "private-key"),
    ("secret", "secret"),
    ("token", "token"),
    ("pass", "password"),
    ("pwd", "password"),
    ("contrase", "password"),
    ("credential", "credentials"),
    ("auth", "credentials"),
    ("session", "token"),
    ("key", "api-key"),
)
_SECRET_KEY_NAME = re.compile(rf"[\w.\- ]{{0,64}}?{_SECRET_WORD}", re.IGNORECASE)
_WORD_AT_END = re.compile(rf"{_SECRET_WORD}$", re.IGNORECASE)
_VALUE = r"""
    (?: \\"(?P<edq>(?:[^"\\\r\n]|\\[^"\r\n])*)\\"
      | "(?P<dq>(?:[^"\\\r\n]|\\.)*)"
      | '(?P<sq>(?:[^'\\\r\n]|\\.)*)'
      | `(?P<bq>[^`\r\n]*)`
      | (?P<raw>[^\s"'`]+) )
"""
# Each is matched at the start of a key found around a keyword (never scanned).
_KEY_ASSIGNMENT = re.compile(
    rf"""(?P<key>[\w.\-]{{0,64}}?{_SECRET_WORD})\\?["'`]?\]?
    [ \t]*(?:=>|:=|::|=(?!=)|:)[ \t]*{_VALUE}""",
    re.IGNORECASE | re.VERBOSE,
)
_FLAG_ASSIGNMENT = re.compile(
    rf"--(?P<key>[\w\-]{{0,64}}?{_SECRET_WORD})(?:=|[ \t]+){_VALUE}",
    re.IGNORECASE | re.VERBOSE,
)
# password: str = "x" (a typed default): only a quoted literal counts as the value.
_ANNOTATED_ASSIGNMENT = re.compile(
    rf"""(?P<key>[\w.\-]{{0,64}}?{_SECRET_WORD})[ \t]*:[ \t]*[A-Za-z_][\w.\[\]|, ]{{0,40}}?
    [ \t]+=[ \t]*(?: "(?P<dq>(?:[^"\\\r\n]|\\.)*)" | '(?P<sq>(?:[^'\\\r\n]|\\.)*)' )""",
    re.IGNORECASE | re.VERBOSE,
)
_KEY_CHAR = re.compile(r"[\w.\-]")
_SEPARATOR = re.compile(r"[:= \t]")
_QUERY_PARAM_START = re.compile(r"&[\w.\-]+=")
_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}
_MAX_KEY = 64


def _key_kind(word: str) -> str:
    lowered = word.lower()
    for needle, kind in _KEY_KINDS:
        if needle in lowered:
            return kind
    return "password"


def _secret_word_of(name: str) -> str | None:
    """The secret word a key name ends with; 'pass' and 'auth' only as whole words."""
    m = _WORD_AT_END.search(name)
    if m is None:
        return None
    word = m.group()
    if word.lower() in {"pass", "auth"} and m.start() > 0 and name[m.start() - 1].isalpha():
        return None  # bypass, compass, oauth
    return word


def _trim_raw(value: str) -> str:
    """An unquoted value stops before a query's next ``&k=``, a trailing ``,;.`` and
    closers it did not open."""
    query = _QUERY_PARAM_START.search(value)
    if query:
        value = value[: query.start()]
    while value:
        last = value[-1]
        if last in ",;.:" or (last in _CLOSERS and value.count(last) > value.count(_CLOSERS[last])):
            value = value[:-1]
        else:
            break
    return value


def _key_start(text: str, stem: int) -> int:
    """Where the key holding a keyword at ``stem`` begins (at most _MAX_KEY back)."""
    start = stem
    while start > 0 and stem - start < _MAX_KEY and _KEY_CHAR.match(text, start - 1):
        start -= 1
    return start if stem - start < _MAX_KEY else stem


def _assignments(t: _Text) -> Iterator[_Span]:
    """Values of ``password=x``, ``"api_key": "x"``, ``--token x``, ``SECRET: x`` ...

    Rules are tried only at keys around a keyword that has a separator close after it,
    and an assignment's value is skipped over, so the cost stays linear.
    """
    text = t.raw
    tried: set[int] = set()
    done = 0
    for stem in _STEM.finditer(t.lower):
        if stem.start() < done:
            continue
        if _SEPARATOR.search(text, stem.end(), stem.end() + _MAX_KEY + 16) is None:
            continue
        start = _key_start(text, stem.start())
        if start in tried:
            continue
        tried.add(start)
        patterns: tuple[re.Pattern[str], ...] = (_KEY_ASSIGNMENT, _ANNOTATED_ASSIGNMENT)
        if text.startswith("--", start):
            patterns = (_FLAG_ASSIGNMENT, *patterns)
        for pattern in patterns:
            m = pattern.match(text, start)
            if m is None:
                continue
            span = _assignment_value(m)
            if span is not None:
                done = max(done, span.end)
                yield span
            elif pattern is not _ANNOTATED_ASSIGNMENT:
                done = max(done, m.end())


_PROSE_AFTER = re.compile(r"[ \t]+['\"`]?[A-Za-z]{2,}")
_CODE_ARGUMENT = re.compile(r"[A-Za-z_]*_[A-Za-z_]*[,)]|[A-Za-z_]+\)")
_ANNOTATION_AFTER = re.compile(r"[ \t]*[|=,)\]]")


def _assignment_value(m: re.Match[str]) -> _Span | None:
    """The secret span of one assignment match, or None for a benign value."""
    groups = m.groupdict()
    key = m.group("key")
    word = _secret_word_of(key)
    if word is None or key.lower() in {"pwd", "oldpwd"}:
        return None  # not a secret key; $PWD/$OLDPWD are the shell's directories
    text = m.string
    if word.lower() in {"pass", "auth"} and len(word) == len(key) and text[m.end("key")] in " \t":
        return None  # "pass :func:`x`", "auth : ..." read as prose or markup
    group = next(g for g in ("edq", "dq", "sq", "bq", "raw") if groups.get(g) is not None)
    start, end = m.span(group)
    value = m.group(group)
    if group == "raw":
        if m.re is _FLAG_ASSIGNMENT and value.startswith("-"):
            return None  # --password --verbose: the flag took no value here
        if value[:1] in "<(" or len(value) <= 2 or _CODE_ARGUMENT.fullmatch(value):
            return None  # <USER>, (user, pw), f(token=tok), g(token=shard_id, ...): code
        value = _trim_raw(value)
        end = start + len(value)
        if value.isalpha() and _PROSE_AFTER.match(text, end):
            return None  # "token: The token to verify." is prose, not a credential
        type_like = value.lstrip("_")[:1].isupper() and value.isidentifier()
        if type_like and _ANNOTATION_AFTER.match(text, end):
            return None  # api_key: ApiKey | None, the type of a parameter
    elif value[:1] in ",;)":
        return None  # "Auth: ", Style(...): a string literal's end read as a value
    if _is_benign(value, word) or value.startswith(("http://", "https://")):
        return None  # a URL's own credentials and tokens are found by the other rules
    return _Span(start, end, _key_kind(word), _FORMAT_RANKS["password"])


# --- high entropy --------------------------------------------------------------------

# The 200 most common letter pairs inside words of Python source (identifiers and
# comments): ~93% of such pairs, against 30% of random letter pairs. A run made of
# words (paths, identifiers, package names) is not a secret however long it is.
_COMMON_BIGRAMS = frozenset(
    re.findall(
        "..",
        "abacadagaialamanaparasatauavbabebjblbobubycacechcickclcocrctcudadddedidldodrdsdu"
        "eaecedeeefelemeneperesetevexeyfafefffifofrfugeghgigrgshahehihohtiaibicidieifigil"
        "iminioipirisitivizjekelaldlelflilllolsltlulymamemimompnancndnenfngninonsntnuoboc"
        "odofolomonoooporosotouowpapepiplpoppprptpyqurarcrdrergrirmrnrorrrsrtrurysascsesh"
        "sismsospssstsusytatethtitotrtstttutyubueulumunupurusutvavewawewhwiwrxcxtypysytze",
    )
)
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX = re.compile(r"[0-9a-fA-F]+")
_SEGMENT_SPLIT = re.compile(r"[-_/.+=]+")
# Hex digests named as such are content hashes (git commits, pip/npm integrity), not keys.
# Likewise trace, request and object ids (a W3C trace id is 32 hex digits).
_HASH_LABEL_BEFORE = re.compile(
    r"(?:commit|sha(?:1|224|256|384|512)?|md5|digest|hash|checksum|integrity|revision|rev"
    r"|oid|tree|parent|blob|etag|uuid|guid|trace|span|request|correlation|object|build|job"
    r"|image|container|layer)(?:[-_ ]?id)?[\"']?\W{0,3}$"
)
_HASH_PATH_LABELS = frozenset({"blob", "tree", "commit", "commits", "raw", "compare", "rev"})
_HASH_PREFIX = re.compile(r"(?i)(?:sha(?:1|224|256|384|512)|md5)[-=:_]")
_MIN_RUN = 20
_MIN_HEX = 32
_MIN_REST = 16


def _entropy(s: str) -> float:
    n = len(s)
    counts: dict[str, int] = {}
    for c in s:
        counts[c] = counts.get(c, 0) + 1
    return -sum(k / n * math.log2(k / n) for k in counts.values())


def _common_ratio(word: str) -> float:
    w = word.lower()
    pairs = len(w) - 1
    return sum(w[i : i + 2] in _COMMON_BIGRAMS for i in range(pairs)) / pairs


_TOKENS = re.compile(r"[A-Z]{2,}(?=[A-Z][a-z]|[^A-Za-z]|$)|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def _wordy(s: str) -> bool:
    """Made of words: mostly common letter pairs, or shaped like an identifier.

    Letter pairs alone miss tech words (mysqldb, markdown), so a camelCase or
    snake_case name also counts: 3+ letter words, fairly pronounceable on average,
    cover most letters, split by case or separators, with at most two runs of digits
    (MySQLCompiler_mysqldb, Draft202012Validator).
    """
    words = _WORDS.findall(s)
    covered = sum(len(w) for w in words if len(w) >= 3 and _common_ratio(w) >= 0.6)
    if covered * 2 >= len(s):
        return True
    tokens = _TOKENS.findall(s)
    letters = sum(len(tok) for tok in tokens if tok[0].isalpha())
    long_words = [tok for tok in tokens if tok[0].isalpha() and len(tok) >= 3]
    digit_runs = sum(tok[0].isdigit() for tok in tokens)
    structured = any(tok[0].isupper() and tok[1:].islower() for tok in long_words) or any(
        c in s for c in "_-/."
    )
    return (
        structured
        and len(long_words) >= 2
        and digit_runs <= 2
        and sum(map(len, long_words)) * 4 >= letters * 3
        and sum(map(_common_ratio, long_words)) >= 0.4 * len(long_words)
    )


def _random_looking(s: str, min_len: int = _MIN_RUN) -> bool:
    """A token of random characters, not a word, path, id, date or number."""
    if _HEX.fullmatch(s):
        # Hex below 32 characters is an id (Mongo ObjectId, short git sha), not a key.
        return len(s) >= _MIN_HEX and _mixed(s) and any(c.isalpha() for c in s)
    if len(s) < min_len or not _mixed(s):
        return False
    letters = sum(c.isalpha() for c in s)
    if letters < 4 or letters * 10 < len(s) * 3 or _entropy(s) < 3.0:
        return False  # mostly digits: timestamps, phone and account numbers
    return not _wordy(s)


def _is_filler(segment: str) -> bool:
    """A part of a structured name that carries no randomness: a number, short or real word."""
    return segment.isdigit() or (segment.isalpha() and len(segment) <= 3) or _wordy(segment)


def _high_entropy_run(run: str) -> bool:
    """Whether a token-like run holds a random-looking secret.

    A run with up to one separator is judged whole. A run with more (a path, a pod
    name, a wheel tag like 6-cp311-cp311-manylinux_2_17_x86_64) is judged by what is
    left once numbers and words are dropped, so a random part glued to words
    (``prod_api_<random>``) is still caught, and the whole run is redacted.
    """
    segments = [seg for seg in _SEGMENT_SPLIT.split(run) if seg]
    if len(segments) <= 2:
        return _random_looking(run)
    # github.com/o/r/blob/<sha>/path: a commit id in a URL path is not a key either.
    segments = [
        seg
        for i, seg in enumerate(segments)
        if not (i and segments[i - 1].lower() in _HASH_PATH_LABELS and _HEX.fullmatch(seg))
    ]
    kept = [seg for seg in segments if not _is_filler(seg)]
    # Joined with a separator so words stay words; the separators do not count.
    return _random_looking("-".join(kept), _MIN_REST + max(0, len(kept) - 1))


def _high_entropy(t: _Text) -> Iterator[_Span]:
    """Long base64/hex-like runs that look random (docs/redaction.md has the rules).

    UUIDs are left alone (ids far more often than keys; a UUID used as a key is
    caught by its keyword, e.g. ``api_key=<uuid>``), and so are hex digests labelled
    as hashes (``commit <sha>``, ``sha256:<hex>``).
    """
    for m in t.runs:
        yield from _run_spans(t, m)


def _run_spans(t: _Text, m: re.Match[str]) -> Iterator[_Span]:
    """The high-entropy spans of one token-like run."""
    run, start = m.group(), m.start()
    if not _mixed(run):
        return
    if "%" in run:
        if _high_entropy_run(unquote(run)):
            yield _Span(start, m.end(), "high-entropy", _FORMAT_RANKS["high-entropy"])
        return
    if _HASH_PREFIX.match(run) or (
        _HEX.fullmatch(run.rstrip("="))
        and _HASH_LABEL_BEFORE.search(t.lower, max(0, start - 40), start)
    ):
        return
    # Judge the pieces between UUIDs; a UUID itself is left alone.
    pos = start
    for piece in _UUID.split(run):
        if len(piece) >= _MIN_REST and _high_entropy_run(piece):
            yield _Span(pos, pos + len(piece), "high-entropy", _FORMAT_RANKS["high-entropy"])
        pos += len(piece)
        uuid = _UUID.match(t.raw, pos)
        if uuid:
            pos = uuid.end()


_OWN_DETECTORS: tuple[Detector, ...] = (
    _private_keys,
    _url_credentials,
    _auth_headers,
    _cookies,
    _token_formats,
    _assignments,
    _high_entropy,
)

# ---------------------------------------------------------------------------------
# detect-secrets, as a second net over our output.
# ---------------------------------------------------------------------------------


class _Plugin(NamedTuple):
    kind: str
    patterns: tuple[re.Pattern[str], ...]  # scanned over the text
    assignments: tuple[re.Pattern[str], ...]  # keyword-led: tried only near a keyword
    gate: Callable[[_Text], bool]


class _KeywordRule(NamedTuple):
    pattern: re.Pattern[str]
    group: int
    value_first: bool  # `"value" == password`: the match starts before the keyword


class _DetectSecrets(NamedTuple):
    plugins: tuple[_Plugin, ...]
    keyword_rules: tuple[_KeywordRule, ...]
    keywords: re.Pattern[str]  # detect-secrets' keyword list, on the lower-case twin


# How RegexBasedDetector.build_assignment_regex starts its patterns (cloudant, IBM,
# softlayer): `key = "..."`-style rules whose match begins at most this far before
# one of these words, which an assignment (quote, bracket, space, = or :) follows.
_ASSIGNMENT_BEGIN = "(?:(?<=\\W)|(?<=^))"
_ASSIGNMENT_STEM = re.compile(r"(?:password|pass|pwd|pw|key|token)(?=[\"'\] =:])")
_ASSIGNMENT_REACH = 32


@cache
def _detect_secrets_rules() -> _DetectSecrets:
    """Load detect-secrets lazily (importing it costs ~0.3 s) and collect its regexes."""
    from detect_secrets.plugins import keyword

    plugins = []
    for module_name, (class_name, kind, gate) in _DETECT_SECRETS_PLUGINS.items():
        cls = getattr(importlib.import_module(f"detect_secrets.plugins.{module_name}"), class_name)
        patterns: tuple[re.Pattern[str], ...] = tuple(cls.denylist)
        led = tuple(p for p in patterns if p.pattern.startswith(_ASSIGNMENT_BEGIN))
        free = tuple(p for p in patterns if p not in led)
        plugins.append(_Plugin(kind, free, led, gate))
    value_first = keyword.PRECEDED_BY_EQUAL_COMPARISON_SIGNS_QUOTES_REQUIRED_REGEX
    rules = tuple(
        _KeywordRule(pattern, group, pattern is value_first)
        for pattern, group in keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items()
    )
    return _DetectSecrets(tuple(plugins), rules, re.compile("|".join(keyword.DENYLIST)))


_DELIMITERS = " \t\r\n=:\"'"
_PWD = re.compile(r"(?i)\W*(?:old)?pwd\W")


_NON_WORD = re.compile(r"\W")


def _assignment_starts(t: _Text) -> list[int]:
    """Offsets where a build_assignment_regex match can begin: after a non-word
    character, shortly before a keyword."""
    text, starts = t.raw, set()
    for stem in _ASSIGNMENT_STEM.finditer(t.lower):
        lo = max(0, stem.start() - _ASSIGNMENT_REACH)
        if lo == 0:
            starts.add(0)
        starts.update(m.end() for m in _NON_WORD.finditer(text, max(0, lo - 1), stem.start()))
    return sorted(starts)


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    """A span without the delimiters some patterns (Artifactory's) include."""
    while start < end and text[start] in _DELIMITERS:
        start += 1
    while end > start and text[end - 1] in _DELIMITERS:
        end -= 1
    return start, end


def _detect_secrets(t: _Text) -> Iterator[_Span]:
    """Spans of the detect-secrets format plugins and its quoted-keyword rules."""
    ds = _detect_secrets_rules()
    text = t.raw
    starts: list[int] | None = None
    for plugin in ds.plugins:
        if not plugin.gate(t):
            continue
        matches: list[re.Match[str]] = [m for p in plugin.patterns for m in p.finditer(text)]
        if plugin.assignments:
            starts = _assignment_starts(t) if starts is None else starts
            matches += filter(None, (p.match(text, s) for p in plugin.assignments for s in starts))
        for m in matches:
            for g in [g for g in range(1, m.re.groups + 1) if m.group(g)] or [0]:
                start, end = _trimmed(text, *m.span(g))
                if end <= start:
                    continue
                if plugin.kind == "url-credentials" and _is_benign(text[start:end]):
                    continue  # {schema}://{user}:{password}@{host} is a template
                yield _Span(start, end, plugin.kind, _DETECT_SECRETS_RANK)
    yield from _detect_secrets_keywords(t, ds)


_DS_WINDOW = 512
_NAME = re.compile(r"\w+")
_QUOTE = re.compile(r"[\"'`]")
_COMPARISON = re.compile(r"[=!]=")


def _detect_secrets_keywords(t: _Text, ds: _DetectSecrets) -> Iterator[_Span]:
    """detect-secrets' quoted-keyword rules, tried only where one of its keywords is.

    A rule that starts with the keyword is matched at the keyword; the comparison rule
    (value first) is searched in a window before it, and only when an ``==``/``!=`` is
    there. Scanning the whole text would be slow and, through the rules'
    ``keyword\\w*`` prefix, quadratic on long words.
    """
    text, seen, scanned = t.raw, set(), 0
    for kw in ds.keywords.finditer(t.lower):
        at = kw.start()
        hi = min(len(text), at + _DS_WINDOW)
        if _QUOTE.search(text, at, hi) is None:
            continue
        for rule in ds.keyword_rules:
            if rule.value_first:
                # Windows of successive keywords would overlap: scan each stretch once.
                lo = max(0, at - _DS_WINDOW, scanned)
                if _COMPARISON.search(text, lo, at) is None:
                    continue
                found: Iterable[re.Match[str]] = rule.pattern.finditer(text, lo, kw.end() + 64)
            else:
                found = filter(None, [rule.pattern.match(text, at, hi)])
            for m in found:
                start, end = m.span(rule.group)
                value = m.group(rule.group)
                if (start, end) in seen or not value or _is_benign(value):
                    continue
                # Their keyword takes any suffix (secret_type, password_hint); like ours,
                # the name must end in the secret word.
                name = _NAME.match(text, m.start())
                if not rule.value_first and (name is None or _secret_word_of(name.group()) is None):
                    continue
                seen.add((start, end))
                if value.startswith(("/", "~")) and _PWD.match(m.group(0)):
                    continue  # "pwd": "/home/x" is the shell's working directory
                yield _Span(start, end, _KEYWORD_KIND, _DETECT_SECRETS_RANK)
        scanned = at


# ---------------------------------------------------------------------------------
# Applying spans.
# ---------------------------------------------------------------------------------


def _opaque(text: str, span: _Span) -> bool:
    """True when a span holds nothing but placeholders and punctuation."""
    rest = _PLACEHOLDER.sub("", text[span.start : span.end])
    return not any(c.isalnum() for c in rest)


def _clip_weak(text: str, spans: list[_Span]) -> list[_Span]:
    """Let a format detector's span decide what is kept around it.

    A high-entropy run can reach past a secret whose format we know
    (``com/services/T0../B0../xyz`` around a Slack webhook's path); it is cut back to
    what lies outside the stronger spans, and a leftover piece stays redacted only
    if it still looks random on its own.
    """
    weak_rank = _FORMAT_RANKS["high-entropy"]
    strong = sorted((s.start, s.end) for s in spans if s.rank > weak_rank)
    if not strong or all(s.rank > weak_rank for s in spans):
        return spans
    out = [s for s in spans if s.rank > weak_rank]
    for span in (s for s in spans if s.rank <= weak_rank):
        pieces = [(span.start, span.end)]
        for lo, hi in strong:
            pieces = [
                part
                for a, b in pieces
                for part in ((a, min(b, lo)), (max(a, hi), b))
                if part[1] > part[0]
            ]
        for a, b in pieces:
            if (a, b) == (span.start, span.end) or (
                b - a >= _MIN_REST and _high_entropy_run(text[a:b])
            ):
                out.append(_Span(a, b, span.kind, span.rank))
    return out


def _apply(t: _Text, detectors: Iterable[Detector]) -> str | None:
    """Replace every span found by ``detectors``; overlapping spans merge into one.

    Returns None when nothing was found.
    """
    text = t.raw
    found = [s for detect in detectors for s in detect(t) if s.end > s.start]
    spans = sorted(
        (s for s in _clip_weak(text, found) if not _opaque(text, s)),
        key=lambda s: (s.start, -s.end),
    )
    if not spans:
        return None
    out: list[str] = []
    pos = 0
    current = spans[0]
    for span in [*spans[1:], None]:
        if span is not None and span.start < current.end:
            best = current if current.rank >= span.rank else span
            current = _Span(current.start, max(current.end, span.end), best.kind, best.rank)
            continue
        out.append(text[pos : current.start])
        out.append(_placeholder(current.kind))
        pos = current.end
        if span is not None:
            current = span
    out.append(text[pos:])
    return "".join(out)


_MAX_PASSES = 4


def _redact(text: str) -> str:
    """Run both detector stages until a pass finds nothing new."""
    netted_clean: str | None = None  # a text the detect-secrets stage found nothing in
    for _ in range(_MAX_PASSES):
        t = _Text(text)
        if not _may_contain_secret(t):
            return text
        found = _apply(t, _OWN_DETECTORS)
        if found is not None:
            t = _Text(found)
        netted = None
        if t.raw != netted_clean and _may_contain_secret(t):
            netted = _apply(t, (_detect_secrets,))
            if netted is None:
                netted_clean = t.raw
        if found is None and netted is None:
            return text
        text = netted if netted is not None else t.raw
    raise RuntimeError("redaction did not converge")  # redact_text fails closed


def _new_hits(before: str, after: str) -> tuple[str, ...]:
    """Kinds of the placeholders in ``after`` that ``before`` did not already have."""
    old = [m.group(1) for m in _PLACEHOLDER_KIND.finditer(before)] if "[REDACTED:" in before else []
    hits: list[str] = []
    for m in _PLACEHOLDER_KIND.finditer(after):
        kind = m.group(1)
        if kind in old:
            old.remove(kind)
        else:
            hits.append(kind)
    return tuple(hits)


def redact_text(text: str) -> Redaction:
    """Replace every secret in ``text`` with ``[REDACTED:<kind>]``.

    Never raises for a ``str``; idempotent; if redaction itself fails, the whole text
    is withheld (``[REDACTED:unscannable]``) rather than returned unscanned.
    """
    try:
        redacted = _redact(text)
        if redacted is text:
            return Redaction(text, ())
        return Redaction(redacted, _new_hits(text, redacted))
    except Exception:
        return Redaction(_placeholder(_UNSCANNABLE), (_UNSCANNABLE,))


# ---------------------------------------------------------------------------------
# Structured values.
# ---------------------------------------------------------------------------------

_AUTH_SCHEME = re.compile(
    r"(?P<scheme>bearer|basic|token|bot|digest|negotiate|ntlm)\s+(?P<cred>\S.*)",
    re.IGNORECASE | re.DOTALL,
)


def _secret_key_kind(key: str) -> str | None:
    """The kind of secret a mapping key announces (``"DB_PASSWORD"`` -> ``password``)."""
    name = key.strip()
    lowered = name.lower()
    if lowered in {"authorization", "proxy-authorization"}:
        return "bearer-token"
    if lowered in {"cookie", "set-cookie"}:
        return "cookie"
    if lowered in {"pwd", "oldpwd"} or not _SECRET_KEY_NAME.fullmatch(name):
        return None
    word = _secret_word_of(name)
    return None if word is None else _key_kind(word)


def _redact_secret_string(value: str, kind: str, hits: list[str]) -> str:
    """A string held under a secret-looking key: withheld whole (an auth scheme is kept)."""
    if _is_benign(value):
        return value
    if kind == "bearer-token" and (m := _AUTH_SCHEME.fullmatch(value.strip())):
        if _is_benign(m.group("cred")):
            return value
        scheme = m.group("scheme")
        kind = "basic-auth" if scheme.lower() == "basic" else "bearer-token"
        hits.append(kind)
        return f"{scheme} {_placeholder(kind)}"
    hits.append(kind)
    return _placeholder(kind)


def _redact_string(value: str, hits: list[str]) -> str:
    if value.lstrip()[:1] in {"{", "["}:
        # JSON inside a string (a tool result wrapped in arguments): redact it as JSON
        # so keys like "password" are seen; keep the original text if nothing is found.
        inner = _redact_json_document(value)
        if inner is not None and inner[1]:
            hits.extend(inner[1])
            return inner[0]
    result = redact_text(value)
    hits.extend(result.hits)
    return result.text


def _redact_node(value: object, hits: list[str], secret_kind: str | None) -> object:
    if isinstance(value, str):
        if secret_kind is not None:
            return _redact_secret_string(value, secret_kind, hits)
        return _redact_string(value, hits)
    if isinstance(value, dict):
        out: dict[object, object] = {}
        for key, item in value.items():
            kind = _secret_key_kind(key) if isinstance(key, str) else None
            new_key = _redact_string(key, hits) if isinstance(key, str) else key
            # A mapping under a secret key is redacted by its own keys; a list's
            # items are all secrets.
            out[new_key] = _redact_node(item, hits, None if isinstance(item, dict) else kind)
        return out
    if isinstance(value, list):
        return [_redact_node(item, hits, secret_kind) for item in value]
    if isinstance(value, tuple):
        return tuple(_redact_node(item, hits, secret_kind) for item in value)
    if secret_kind is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        hits.append(secret_kind)
        return _placeholder(secret_kind)
    return value


def redact_value(value: object) -> tuple[object, tuple[str, ...]]:
    """Redact a JSON-like value (dicts, lists, strings) recursively.

    Every string (and string key) is redacted as text, and every value under a
    secret-looking key (``password``, ``api_key``, ``client_secret``,
    ``Authorization``, ...) is replaced by ``[REDACTED:<kind>]`` whatever it looks
    like: a key says more than any pattern. Returns the new value and the kinds
    found. Too deep a structure is withheld whole rather than passed through.
    """
    hits: list[str] = []
    try:
        return _redact_node(value, hits, None), tuple(hits)
    except RecursionError:
        return _placeholder(_UNSCANNABLE), (_UNSCANNABLE,)


def _redact_json_document(raw: str) -> tuple[str, tuple[str, ...]] | None:
    """Redact ``raw`` as JSON; None if it does not parse."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    new, hits = redact_value(data)
    if not hits:
        return raw, ()
    try:
        return json.dumps(new, ensure_ascii=False), hits
    except (ValueError, RecursionError):
        return json.dumps(_placeholder(_UNSCANNABLE)), (_UNSCANNABLE,)


def redact_json(raw: str) -> Redaction:
    """Redact a JSON document (tool-call arguments or a JSON tool result).

    If ``raw`` parses, string values are redacted as text, values under secret-looking
    keys are withheld, and the result is re-serialised with ``ensure_ascii=False`` so
    it is still valid JSON (input with nothing to redact comes back unchanged, byte
    for byte). If it does not parse, this is :func:`redact_text`.
    """
    try:
        # Without escapes that could hide a trigger (\\u0070assword, https:\\/\\/) and
        # without a trigger in the raw text, nothing inside can be a secret either.
        if "\\u" not in raw and "\\/" not in raw and not _may_contain_secret(_Text(raw)):
            return Redaction(raw, ())
        result = _redact_json_document(raw)
    except Exception:
        return Redaction(json.dumps(_placeholder(_UNSCANNABLE)), (_UNSCANNABLE,))
    if result is None:
        return redact_text(raw)
    return Redaction(*result)
