"""Shared pieces of the review tests: real main-agent tools and skill text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.openai_double import OpenAIDouble

from warmstart.runtime import Runtime, ToolRegistry

MAIN_KEY = "sk-main-key"
MAIN_SYSTEM = "You are a deployment assistant for ACME."


def skill_md(name: str, description: str, body: str) -> str:
    """A valid SKILL.md."""
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


DEPLOY_SKILL = skill_md(
    "deploy-checklist",
    "Deploy a service to staging safely.",
    "# Deploy checklist\n\n1. Run the tests.\n2. Deploy with `make deploy`.\n",
)


class MainTools:
    """Real tools of the main agent, remembering every call that reached them."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def terminal(self, args: dict[str, Any]) -> str:
        self.calls.append(("terminal", args))
        return json.dumps({"exit_code": 0, "output": "deployed"})

    def get_user(self, args: dict[str, Any]) -> str:
        self.calls.append(("get_user", args))
        return json.dumps({"name": "Ada"})

    def registry(self) -> ToolRegistry:
        registry = ToolRegistry()
        registry.register(
            "terminal",
            self.terminal,
            description="Run a shell command",
            parameters={"type": "object", "properties": {"command": {"type": "string"}}},
        )
        registry.register("get_user", self.get_user, description="Look the user up")
        return registry


def main_runtime(double: OpenAIDouble, registry: ToolRegistry, **options: Any) -> Runtime:
    """The main agent's runtime over the double (fixed window: no probes)."""
    options.setdefault("context_length", 128_000)
    return Runtime(
        registry, model="double-model", base_url=double.base_url, api_key=MAIN_KEY, **options
    )


def write_skill(home: Path, name: str, text: str, category: str | None = None) -> Path:
    """Put a SKILL.md on disk the way a user (or Hermes) would."""
    folder = home / "skills" / (category or "") / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    return folder / "SKILL.md"


def tool_results(request: dict[str, Any]) -> dict[str, Any]:
    """The tool messages at the end of a chat request, by tool call id, JSON-decoded
    where possible."""
    results: dict[str, Any] = {}
    for message in reversed(request["messages"]):
        if message["role"] != "tool":
            break
        try:
            results[message["tool_call_id"]] = json.loads(message["content"])
        except ValueError:
            results[message["tool_call_id"]] = message["content"]
    return results
