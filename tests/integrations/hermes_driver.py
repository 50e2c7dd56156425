"""Runs under hermes-agent's own Python (``$WARMSTART_HERMES_PYTHON``), driven by
``test_hermes_plugin.py``: Hermes' plugin manager discovers and loads the warmstart plugin
through its entry point, then real ``AIAgent`` conversations run against the OpenAI
double and the approval gate that the test serves on loopback.

Prints one line ``REPORT: {json}`` with everything the test asserts on. Environment:
``HERMES_HOME`` (a config.yaml enabling the plugin), ``WARMSTART_HOME``, ``WARMSTART_DB``,
``WARMSTART_GATE_URL``, ``DRIVER_BASE_URL`` (the double), ``DRIVER_MARKERS`` (a folder
the high-risk tool writes into when it really runs).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

MODEL = "double-model"


def register_risky_tool(markers: Path) -> None:
    """A high-risk tool as another plugin would add it: it leaves a file when it runs."""
    from tools.registry import registry

    def deploy(args: dict[str, Any], **_: Any) -> str:
        service = str(args.get("service", "unknown"))
        (markers / f"deployed-{service}").write_text(str(time.time()))
        return json.dumps({"deployed": service})

    registry.register(
        name="deploy_production",
        toolset="skills",
        schema={
            "name": "deploy_production",
            "description": "Deploy a service to production.",
            "parameters": {
                "type": "object",
                "properties": {"service": {"type": "string"}},
                "required": ["service"],
            },
        },
        handler=deploy,
    )


def plugin_state() -> dict[str, Any]:
    from hermes_cli.plugins import get_plugin_manager
    from tools.registry import registry

    manager = get_plugin_manager()
    info = next((p for p in manager.list_plugins() if p["key"] == "warmstart"), None)
    loaded = manager._plugins.get("warmstart")
    entry = registry._tools.get("warm_session")
    hooks = manager._hooks.get("pre_llm_call") or []
    config = hooks[0].__self__.config.__dict__ if hooks else None
    return {
        "config": {k: v for k, v in (config or {}).items() if k != "gate_token"},
        "plugin": info,
        "tools_registered": sorted(loaded.tools_registered) if loaded else [],
        "hooks_registered": sorted(loaded.hooks_registered) if loaded else [],
        "middleware_registered": sorted(loaded.middleware_registered) if loaded else [],
        "tool_toolset": entry.toolset if entry else None,
        "tool_schema_name": entry.schema.get("name") if entry else None,
    }


def run_agent(base_url: str, message: str) -> dict[str, Any]:
    from run_agent import AIAgent

    started = time.monotonic()
    agent = AIAgent(
        base_url=base_url,
        api_key="sk-hermes-test",
        model=MODEL,
        quiet_mode=True,
        enabled_toolsets=["skills"],
        skip_context_files=True,
        skip_memory=True,
        max_iterations=4,
    )
    built = time.monotonic()
    result = agent.run_conversation(message)
    return {
        "seconds": {"init": built - started, "run": time.monotonic() - built},
        "session_id": agent.session_id,
        "final": result.get("final_response"),
        "messages": result.get("messages"),
    }


def main() -> None:
    report: dict[str, Any] = {}
    base_url = os.environ["DRIVER_BASE_URL"]
    markers = Path(os.environ["DRIVER_MARKERS"])
    try:
        from hermes_cli.middleware import apply_llm_request_middleware
        from hermes_cli.plugins import discover_plugins, invoke_hook
        from tools.registry import registry

        started = time.monotonic()
        discover_plugins()
        report["discover_seconds"] = time.monotonic() - started
        report["state"] = plugin_state()
        report["tool_list"] = json.loads(registry.dispatch("warm_session", {"action": "list"}))
        report["tool_bad"] = json.loads(registry.dispatch("warm_session", {"action": "load"}))

        # The hook and the middleware, called the way Hermes calls them.
        hook = invoke_hook(
            "pre_llm_call",
            session_id="direct-1",
            user_message="I want to change the flight on my reservation",
            is_first_turn=True,
            model=MODEL,
            conversation_history=[],
        )
        request = {
            "model": MODEL,
            "messages": [
                {"role": "system", "content": "You are Hermes."},
                {"role": "user", "content": "I want to change the flight on my reservation"},
            ],
        }
        shaped = apply_llm_request_middleware(request, session_id="direct-1", model=MODEL)
        later = invoke_hook(
            "pre_llm_call",
            session_id="direct-1",
            user_message="and a second question",
            is_first_turn=False,
            model=MODEL,
            conversation_history=[{"role": "user", "content": "x"}],
        )
        report["prefill"] = {
            "hook_results": hook,
            "later_hook_results": later,
            "messages": shaped.payload["messages"],
            "changed": shaped.changed,
        }

        # Real conversations: warm prefix in, risky tool approved, then one denied.
        register_risky_tool(markers)
        report["approved_run"] = run_agent(base_url, "Deploy the billing service to production")
        report["denied_run"] = run_agent(base_url, "Deploy the search service to production")

        # Context mode: Hermes reloads the plugin with the new setting.
        os.environ["WARMSTART_HERMES_MODE"] = "context"
        discover_plugins(force=True)
        report["context_state"] = plugin_state()
        report["context"] = {
            "hook_results": invoke_hook(
                "pre_llm_call",
                session_id="direct-2",
                user_message="Cancel my reservation please",
                is_first_turn=True,
                model=MODEL,
                conversation_history=[],
            ),
            "middleware_changed": apply_llm_request_middleware(
                request, session_id="direct-2", model=MODEL
            ).changed,
        }
    except Exception:
        report["error"] = traceback.format_exc()
    sys.stdout.write("REPORT: " + json.dumps(report, default=str) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
