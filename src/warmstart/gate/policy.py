"""Server-side policy: rate limits, the pending cap, the allow-list and the high-risk set."""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from warmstart.errors import ConfigError
from warmstart.gate.settings import GateSettings


@dataclass(frozen=True)
class Policy:
    """What the gate enforces on every submission."""

    rate_limit: int = 10
    window_seconds: int = 3600
    max_pending: int = 20
    auto_approve: frozenset[str] = field(default_factory=frozenset)
    high_risk: tuple[str, ...] = ()
    consume_window_seconds: int = 600
    default_timeout: int = 300
    min_timeout: int = 30
    max_timeout: int = 3600

    @classmethod
    def from_settings(cls, settings: GateSettings) -> Policy:
        """Build the policy, refusing a global allow-list that names a high-risk action."""
        policy = cls(
            rate_limit=settings.rate_limit,
            window_seconds=settings.rate_window_seconds,
            max_pending=settings.max_pending_per_requester,
            auto_approve=frozenset(settings.auto_approve),
            high_risk=tuple(settings.high_risk),
            consume_window_seconds=settings.consume_window_seconds,
            default_timeout=settings.default_timeout_seconds,
            min_timeout=settings.min_timeout_seconds,
            max_timeout=settings.max_timeout_seconds,
        )
        risky = sorted(a for a in policy.auto_approve if policy.is_high_risk(a))
        if risky:
            raise ConfigError(f"high-risk actions can never be auto-approved: {', '.join(risky)}")
        if not policy.min_timeout <= policy.default_timeout <= policy.max_timeout:
            raise ConfigError("default timeout must lie between the minimum and maximum")
        return policy

    def is_high_risk(self, action: str) -> bool:
        """Whether ``action`` matches a pattern of the high-risk set."""
        return any(fnmatchcase(action, pattern) for pattern in self.high_risk)

    def clamp_timeout(self, seconds: int | None) -> int:
        """The decision timeout, clamped to the allowed range."""
        if seconds is None:
            return self.default_timeout
        return max(self.min_timeout, min(self.max_timeout, seconds))
