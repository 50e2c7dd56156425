"""The reviewer's approval hook: only memory and skill tools, and never a dangerous command.

The review runs unattended on a background thread, so nobody can be asked. The
runtime's whitelist already refuses any tool outside the review set before the hook
is consulted; this hook is the second lock on the same door (it denies any other tool
too, in case a caller widens the whitelist) and it denies every call whose arguments
carry a destructive shell command: a ``command``/``cmd``/``script``/``code`` argument of
any tool, and the content of a skill's ``scripts/`` file, which a future agent may run
without reading it. Denial is a tool result the model sees, never an exception.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the runtime pulls in the openai client; load it only when deciding
    from warmstart.runtime.approval import Decision, ToolRequest

REVIEW_TOOLS = ("memory", "skill_manage", "skills_list", "skill_view")
"""Exactly the tools a review may call: memory writes, skill writes, skill reads."""
COMMAND_KEYS = frozenset({"command", "cmd", "commands", "script", "code", "shell"})

DANGEROUS_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), reason)
    for pattern, reason in (
        (r"\brm\s+(-[a-z]*\s+)*-[a-z]*[rf][a-z]*\b", "recursive or forced delete (rm -r/-f)"),
        (r"\brm\s+.*(\s|^)(/|~|\$HOME|\*)(\s|$)", "delete of a root, home or wildcard path"),
        (r"\bmkfs(\.\w+)?\b", "formats a filesystem (mkfs)"),
        (r"\bdd\b.*\bof=/dev/", "writes a raw device (dd of=/dev/...)"),
        (r">\s*/dev/(sd|nvme|hd|disk)", "overwrites a disk device"),
        (r"\bchmod\s+(-[a-z]*\s+)*(-R|--recursive)\b", "recursive permission change"),
        (r"\bchown\s+(-[a-z]*\s+)*(-R|--recursive)\b", "recursive ownership change"),
        (r"\b(curl|wget)\b[^|]*\|\s*(sudo\s+)?(ba|z|da)?sh\b", "pipes a download into a shell"),
        (r":\(\)\s*\{\s*:\|:&\s*\};:", "fork bomb"),
        (r"\b(shutdown|reboot|halt|poweroff)\b", "stops or restarts the machine"),
        (r"\bkill(all)?\s+(-9\s+)?-1\b", "kills every process"),
        (r"\bsudo\b", "runs as root (sudo)"),
        (r"\bgit\s+push\b.*(--force|-f\b)", "force-pushes git history"),
        (r"\bgit\s+(reset\s+--hard|clean\s+-[a-z]*f)", "discards uncommitted work"),
        (r"\b(drop|truncate)\s+(table|database|schema)\b", "destroys database objects"),
        (r"\bbase64\s+(-d|--decode)\b.*\|\s*(ba|z)?sh\b", "runs an encoded payload"),
    )
)


def dangerous_command(text: str) -> str | None:
    """Why ``text`` looks like a destructive shell command, or None if it does not."""
    for pattern, reason in DANGEROUS_PATTERNS:
        if pattern.search(text):
            return reason
    return None


def _command_texts(tool: str, arguments: Mapping[str, Any]) -> Iterator[str]:
    """The argument values that would be executed, now or by a future agent."""
    for key, value in arguments.items():
        if key.lower() in COMMAND_KEYS:
            if isinstance(value, str):
                yield value
            elif isinstance(value, list):
                yield from (v for v in value if isinstance(v, str))
    if tool == "skill_manage":
        path = arguments.get("file_path")
        if isinstance(path, str) and path.strip().replace("\\", "/").startswith("scripts/"):
            for key in ("file_content", "new_string"):
                value = arguments.get(key)
                if isinstance(value, str):
                    yield value


def review_approval(request: ToolRequest) -> Decision:
    """Allow review tools with harmless arguments; deny everything else, with a reason."""
    from warmstart.runtime.approval import Decision

    if request.tool not in REVIEW_TOOLS:
        return Decision.deny(
            f"the background review may only use {', '.join(REVIEW_TOOLS)}; "
            f"{request.tool!r} is not allowed"
        )
    for text in _command_texts(request.tool, request.arguments):
        reason = dangerous_command(text)
        if reason:
            return Decision.deny(
                f"dangerous command refused in an unattended review ({reason}); "
                "nothing was run or written"
            )
    return Decision.allow()
