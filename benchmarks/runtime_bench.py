"""How much the runtime adds per turn on top of the endpoint's own latency.

Target: at most 1 ms per turn. Both sides talk to the same loopback OpenAI double and
send the same requests (same system message, same tool schema, same messages):

* **bare**: a hand-written loop on the official ``openai`` client that executes the tool
  inline and appends results, with nothing else;
* **runtime**: :class:`warmstart.runtime.Runtime` doing the same task, so it also pays for
  its whitelist, approval hook, argument parsing, tool worker thread, records and usage
  accounting.

Runs alternate (bare first, then runtime first, ...) after a warm-up so drift in the
machine's load hits both alike. Two figures come out:

* wall time per turn of each loop, their ratio and difference (what a user sees; noisy on
  a busy machine, as the endpoint's latency varies between requests);
* time per turn spent *outside* the ``chat.completions.create`` call in each loop, and
  its difference: the runtime's own added cost, measured without the endpoint's noise.

    .venv/bin/python benchmarks/runtime_bench.py [--runs 60] [--turns 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from openai import OpenAI  # noqa: E402
from tests.support.openai_double import OpenAIDouble, Reply, call, text, tool_calls  # noqa: E402

from warmstart.runtime import Runtime, ToolRegistry, allow_all, runtime_hint  # noqa: E402

MODEL = "bench-model"
TARGET_MS = 1.0
PARAMETERS = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}


def add(args: dict[str, Any]) -> int:
    return int(args["a"]) + int(args["b"])


def scripted(turns: int) -> Any:
    """A responder: a tool call per turn until ``turns`` completions, then an answer."""

    def respond(request: dict[str, Any]) -> Reply:
        done = sum(1 for m in request["messages"] if m.get("role") == "tool")
        if done < turns - 1:
            return tool_calls(call("add", {"a": done, "b": 1}, id=f"call_{done}"))
        return text("finished")

    return respond


def bare_run(client: OpenAI, system: str, tools: list[dict[str, Any]], task: str) -> int:
    """The minimal loop the runtime is measured against; returns completions made."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": task},
    ]
    turns = 0
    while True:
        response = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)  # type: ignore[arg-type]
        turns += 1
        message = response.choices[0].message
        if not message.tool_calls:
            return turns
        calls = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments},  # type: ignore[union-attr]
            }
            for c in message.tool_calls
        ]
        messages.append({"role": "assistant", "content": message.content, "tool_calls": calls})
        for c in calls:
            value = add(json.loads(c["function"]["arguments"]))
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": c["id"],
                    "name": c["function"]["name"],
                    "content": json.dumps(value),
                }
            )


class Timed:
    """Wraps ``client.chat.completions.create`` to sum the time spent inside it."""

    def __init__(self, client: Any) -> None:
        self.inside = 0.0
        completions = client.chat.completions
        self._create = completions.create
        completions.create = self

    def __call__(self, **options: Any) -> Any:
        started = time.perf_counter()
        try:
            return self._create(**options)
        finally:
            self.inside += time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=60, help="measured runs per side")
    parser.add_argument("--turns", type=int, default=5, help="completions per run")
    parser.add_argument("--warmup", type=int, default=5)
    options = parser.parse_args()

    registry = ToolRegistry()
    registry.register("add", add, description="Add two numbers", parameters=PARAMETERS)
    with OpenAIDouble(models=[{"id": MODEL, "max_model_len": 131072}]) as double:
        double.responder = scripted(options.turns)
        runtime = Runtime(
            registry,
            model=MODEL,
            base_url=double.base_url,
            approval=allow_all,
            context_length=131072,
        )
        client = OpenAI(base_url=double.base_url, api_key="not-needed", max_retries=0)
        bare_timer, our_timer = Timed(client), Timed(runtime.client)
        system = runtime_hint(MODEL, runtime.endpoint.provider, 131072)
        tools = registry.schemas()
        task = "Add numbers until done."

        def run_bare() -> tuple[float, float, int]:
            before, started = bare_timer.inside, time.perf_counter()
            turns = bare_run(client, system, tools, task)
            return time.perf_counter() - started, bare_timer.inside - before, turns

        tool_ms: list[float] = []

        def run_ours() -> tuple[float, float, int]:
            before, started = our_timer.inside, time.perf_counter()
            result = runtime.run(task)
            if result.stop_reason != "final_answer":
                raise SystemExit(f"runtime run failed: {result.errors}")
            tool_ms.extend(c.duration * 1000 for c in result.calls)
            return time.perf_counter() - started, our_timer.inside - before, result.turns

        wall: dict[str, list[float]] = {"bare": [], "ours": []}
        outside: dict[str, list[float]] = {"bare": [], "ours": []}
        for i in range(options.warmup + options.runs):
            order = [("bare", run_bare), ("ours", run_ours)]
            if i % 2:
                order.reverse()
            for side, run in order:
                total, inside, turns = run()
                if turns != options.turns:
                    raise SystemExit(f"{side} made {turns} turns, expected {options.turns}")
                if i >= options.warmup:
                    wall[side].append(total / turns * 1000)
                    outside[side].append((total - inside) / turns * 1000)
        sent = double.chat_requests
        if sent[0] != sent[options.turns]:
            raise SystemExit("bare and runtime requests differ")

    bare_ms, our_ms = (statistics.median(wall[s]) for s in ("bare", "ours"))
    bare_out, our_out = (statistics.median(outside[s]) for s in ("bare", "ours"))
    added = our_out - bare_out
    load = os.getloadavg()[0]
    print(
        f"runtime benchmark: {options.runs} runs x {options.turns} turns, loopback double, "
        f"{os.cpu_count()} CPUs, load average {load:.2f}"
    )
    print("                    wall ms/turn   outside the API call ms/turn   (medians)")
    print(f"  bare openai loop  {bare_ms:10.3f}     {bare_out:10.3f}")
    print(f"  warmstart runtime {our_ms:10.3f}     {our_out:10.3f}")
    print(f"  ratio             {our_ms / bare_ms:10.3f}x")
    print(f"  wall difference   {our_ms - bare_ms:+10.3f} ms/turn (noisy: endpoint latency varies)")
    tool_ms.sort()
    print(
        f"  tool call (handoff to worker thread + add): median {statistics.median(tool_ms):.3f} ms,"
        f" p90 {tool_ms[int(len(tool_ms) * 0.9)]:.3f} ms"
    )
    verdict = "OK" if added <= TARGET_MS else "OVER TARGET"
    print(f"  runtime added     {added:+10.3f} ms/turn (target <= {TARGET_MS:.1f} ms): {verdict}")


if __name__ == "__main__":
    main()
