"""How much latency the warmstart proxy adds, and how many requests per second it relays.

Targets: added latency p50 at most 2 ms and p99 at most 10 ms (PASS/FAIL printed).

Three processes on loopback, as in production:

* **upstream**: a minimal asyncio HTTP/1.1 server that answers every chat request at once
  with the same small ``chat.completion`` (no model, no queue: whatever latency shows up
  beyond the network stack is the proxy's);
* **proxy**: ``create_app(ProxySettings(...))`` under uvicorn, injecting template
  ``airline`` (built from the bundled τ-bench corpus) into every new conversation, like
  ``warmstart proxy --upstream URL --template airline``;
* **clients** (this process): 50 concurrent keep-alive connections speaking raw HTTP/1.1
  (a light load generator, so the figures are not the client library's), each running
  10-turn conversations with a distinct first user message, so every tenth request
  starts a conversation and pays for choosing its warm examples.

The same requests go to the upstream directly and through the proxy, in alternating
rounds so drift in the machine's load hits both alike. Latency is measured at a paced
load: each client sends 2 requests per second (100 per second in all), faster than an
agent that waits for a real model between requests, yet below saturation, so the
figures are the proxy's work and not a queue. Added p50 and p99 are the differences of
the two sides' percentiles. Throughput is measured separately with every client sending
back to back, and the proxy's CPU time per request is printed as a figure that depends
less on what else the machine is doing.

    .venv/bin/python benchmarks/proxy_bench.py [--clients 50] [--seconds 4] [--rate 2]
        [--turns 10] [--cold] [--record] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

TARGET_P50_MS = 2.0
TARGET_P99_MS = 10.0
MODEL = "bench-model"
SYSTEM = "You are an airline customer service agent. Use the tools to help the user."
TASKS = (
    "I want to change my flight to a later date",
    "Please cancel my reservation, I cannot travel",
    "Can I upgrade my ticket to business class?",
    "I need to add a checked bag to my booking",
    "What is the status of my flight tomorrow?",
    "Update the passenger name on my reservation",
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name.replace('_', ' ')}",
            "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
        },
    }
    for name in ("get_user_details", "get_reservation_details", "update_reservation_flights")
]
COMPLETION = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Sure, let me look that up."},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 8, "total_tokens": 108},
    }
).encode()


# -- the upstream ------------------------------------------------------------------------


class _Upstream(asyncio.Protocol):
    """HTTP/1.1 keep-alive; every request gets the same completion at once."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: Any = transport
        self.buffer = b""
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                key, _, value = line.partition(":")
                if key.strip().lower() == "content-length":
                    length = int(value.strip())
            if len(self.buffer) < end + 4 + length:
                return
            self.buffer = self.buffer[end + 4 + length :]
            self.transport.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                + str(len(COMPLETION)).encode()
                + b"\r\n\r\n"
                + COMPLETION
            )


def run_upstream(sock: socket.socket) -> None:
    """Serve the upstream on an already bound socket until killed."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(_Upstream, sock=sock, backlog=512)
        await server.serve_forever()

    asyncio.run(main())


# -- the proxy ---------------------------------------------------------------------------


def run_proxy(sock: socket.socket, settings: dict[str, Any], home: str) -> None:
    """Serve the proxy under uvicorn on an already bound socket until killed."""
    os.environ["WARMSTART_HOME"] = home
    import uvicorn

    from warmstart.proxy import ProxySettings, create_app

    app = create_app(ProxySettings(**settings))
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


def bound_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(512)
    return sock


# -- the clients -------------------------------------------------------------------------


class Connection:
    """One keep-alive HTTP/1.1 connection sending chat requests."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        sock = self.writer.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    async def post(self, body: bytes) -> tuple[int, bytes]:
        assert self.reader is not None and self.writer is not None
        self.writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n"
            b"content-type: application/json\r\nauthorization: Bearer sk-bench\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        length = next(
            int(line.split(":", 1)[1])
            for line in lines[1:]
            if line.lower().startswith("content-length:")
        )
        return status, await self.reader.readexactly(length)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


class Conversations:
    """Request bodies of multi-turn conversations, a distinct first message each."""

    def __init__(self, client: int, turns: int, tag: str) -> None:
        self.client = client
        self.turns = turns
        self.tag = tag
        self.number = 0
        self.messages: list[dict[str, Any]] = []

    def next_body(self) -> tuple[bytes, bool]:
        """The next request and whether it starts a conversation."""
        new = not self.messages or len(self.messages) >= 2 * self.turns
        if new:
            self.number += 1
            task = TASKS[(self.client + self.number) % len(TASKS)]
            first = f"{task} (ref {self.tag}-{self.client}-{self.number})"
            self.messages = [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": first},
            ]
        else:
            self.messages += [
                {"role": "assistant", "content": "Sure, let me look that up."},
                {"role": "user", "content": f"Thanks, and turn {len(self.messages)}?"},
            ]
        body = {"model": MODEL, "messages": self.messages, "tools": TOOLS, "temperature": 0}
        return json.dumps(body).encode(), new


async def drive(
    port: int, clients: int, seconds: float, rate: float | None, turns: int, tag: str
) -> tuple[list[float], list[float], int, float]:
    """Run ``clients`` for ``seconds``; latencies (ms) of all and of first turns, errors."""
    latencies: list[float] = []
    firsts: list[float] = []
    errors = 0
    connections = [Connection(port) for _ in range(clients)]
    await asyncio.gather(*(c.open() for c in connections))
    started = time.perf_counter()
    stop = started + seconds

    async def client(index: int, connection: Connection) -> None:
        nonlocal errors
        script = Conversations(index, turns, tag)
        # Stagger the paced clients so they do not all fire in the same instant.
        due = time.perf_counter() + (index / clients / rate if rate else 0.0)
        while True:
            if rate:
                wait = due - time.perf_counter()
                if wait > 0:
                    await asyncio.sleep(wait)
                due += 1.0 / rate
            if time.perf_counter() >= stop:
                return
            body, new = script.next_body()
            t0 = time.perf_counter()
            status, _ = await connection.post(body)
            elapsed = (time.perf_counter() - t0) * 1000
            if status != 200:
                errors += 1
            latencies.append(elapsed)
            if new:
                firsts.append(elapsed)

    await asyncio.gather(*(client(i, c) for i, c in enumerate(connections)))
    duration = time.perf_counter() - started
    await asyncio.gather(*(c.close() for c in connections))
    return latencies, firsts, errors, duration


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def build_store(home: str) -> str:
    """A store with the τ-bench corpus ingested and template ``airline`` built."""
    os.environ["WARMSTART_HOME"] = home
    import warmstart
    from warmstart.cli.demo import sample_path

    url = f"sqlite:///{Path(home) / 'bench.db'}"
    warmstart.ingest(sample_path(), db=url)
    warmstart.build_template("airline", url, budget=1500)
    return url


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=4.0, help="per round and side")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rate", type=float, default=2.0, help="requests/s per client")
    parser.add_argument("--turns", type=int, default=10, help="requests per conversation")
    parser.add_argument("--record", action="store_true", help="also record to the store")
    parser.add_argument("--cold", action="store_true", help="no template: pure relaying")
    parser.add_argument("--json", action="store_true", help="print a JSON summary")
    args = parser.parse_args()

    home = tempfile.mkdtemp(prefix="warmstart-proxy-bench-")
    db = build_store(home)
    ctx = mp.get_context("spawn")
    up_sock, proxy_sock = bound_socket(), bound_socket()
    up_port, proxy_port = up_sock.getsockname()[1], proxy_sock.getsockname()[1]
    settings = {
        "upstream": f"http://127.0.0.1:{up_port}/v1",
        "template": None if args.cold else "airline",
        "db_url": db,
        "context_length": 128_000,
        "record": args.record,
    }
    upstream = ctx.Process(target=run_upstream, args=(up_sock,), daemon=True)
    proxy = ctx.Process(target=run_proxy, args=(proxy_sock, settings, home), daemon=True)
    upstream.start()
    proxy.start()
    try:
        return asyncio.run(measure(args, up_port, proxy_port, proxy.pid))
    finally:
        for process in (proxy, upstream):
            process.terminate()
            process.join(5)


def cpu_seconds(pid: int | None) -> float:
    """User and system CPU time of a process so far (psutil, a test dependency)."""
    try:
        import psutil
    except ImportError:
        return float("nan")
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


async def measure(
    args: argparse.Namespace, up_port: int, proxy_port: int, proxy_pid: int | None
) -> int:
    await wait_ready(proxy_port)
    # Warm-up: connections, the template's index, the context guard's cache.
    await drive(proxy_port, args.clients, 1.0, args.rate, args.turns, "warmup")
    await drive(up_port, args.clients, 0.5, args.rate, args.turns, "warmup")
    sides: dict[str, dict[str, list[float]]] = {
        "direct": {"all": [], "first": []},
        "proxy": {"all": [], "first": []},
    }
    errors = 0
    proxy_cpu = 0.0
    for round_no in range(args.rounds):
        order = (("direct", up_port), ("proxy", proxy_port))
        for side, port in order if round_no % 2 == 0 else order[::-1]:
            tag = f"r{round_no}{side}"
            before = cpu_seconds(proxy_pid)
            lat, first, err, _ = await drive(
                port, args.clients, args.seconds, args.rate, args.turns, tag
            )
            if side == "proxy":
                proxy_cpu += cpu_seconds(proxy_pid) - before
            sides[side]["all"] += lat
            sides[side]["first"] += first
            errors += err
    rps: dict[str, float] = {}
    for side, port in (("direct", up_port), ("proxy", proxy_port)):
        lat, _, err, duration = await drive(
            port, args.clients, args.seconds, None, args.turns, f"tp{side}"
        )
        rps[side] = len(lat) / duration
        errors += err

    def pct(side: str, kind: str, q: float) -> float:
        return percentile(sides[side][kind], q)

    added_p50 = pct("proxy", "all", 50) - pct("direct", "all", 50)
    added_p99 = pct("proxy", "all", 99) - pct("direct", "all", 99)
    ok = added_p50 <= TARGET_P50_MS and added_p99 <= TARGET_P99_MS and errors == 0
    summary = {
        "clients": args.clients,
        "rate_per_client": args.rate,
        "turns": args.turns,
        "record": args.record,
        "requests": {s: len(v["all"]) for s, v in sides.items()},
        "direct_ms": {"p50": pct("direct", "all", 50), "p99": pct("direct", "all", 99)},
        "proxy_ms": {"p50": pct("proxy", "all", 50), "p99": pct("proxy", "all", 99)},
        "proxy_first_turn_ms": {"p50": pct("proxy", "first", 50), "p99": pct("proxy", "first", 99)},
        "added_ms": {"p50": added_p50, "p99": added_p99},
        "rps": rps,
        "proxy_cpu_ms_per_request": proxy_cpu / max(len(sides["proxy"]["all"]), 1) * 1000,
        "load_average": os.getloadavg(),
        "errors": errors,
        "pass": ok,
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"{args.clients} clients x {args.rate:g} req/s, {args.turns}-turn conversations, "
            f"{'no template' if args.cold else 'template airline'}"
            f"{', recording' if args.record else ''}"
        )
        print(
            f"requests measured: direct {summary['requests']['direct']}, "
            f"proxy {summary['requests']['proxy']}, errors {errors}"
        )
        for side in ("direct", "proxy"):
            p50, p99 = pct(side, "all", 50), pct(side, "all", 99)
            print(f"  {side:<7} p50 {p50:6.2f} ms   p99 {p99:6.2f} ms")
        print(
            f"  proxy, first turn of a conversation: p50 {pct('proxy', 'first', 50):.2f} ms, "
            f"p99 {pct('proxy', 'first', 99):.2f} ms"
        )
        verdict_50 = "PASS" if added_p50 <= TARGET_P50_MS else "FAIL"
        verdict_99 = "PASS" if added_p99 <= TARGET_P99_MS else "FAIL"
        print(
            f"added latency p50 {added_p50:6.2f} ms (target <= {TARGET_P50_MS:g} ms) {verdict_50}"
        )
        print(
            f"added latency p99 {added_p99:6.2f} ms (target <= {TARGET_P99_MS:g} ms) {verdict_99}"
        )
        print(
            f"requests per second, {args.clients} clients back to back: "
            f"direct {rps['direct']:.0f}, proxy {rps['proxy']:.0f}"
        )
        print(
            f"proxy CPU per request {summary['proxy_cpu_ms_per_request']:.2f} ms; "
            f"machine load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
        )
        print("PASS" if ok else "FAIL")
    return 0 if ok else 1


async def wait_ready(port: int, timeout: float = 60.0) -> None:
    """Wait until the proxy answers a chat request (the socket accepts before it serves)."""
    body, _ = Conversations(0, 1, "ready").next_body()
    connection = Connection(port)
    await connection.open()
    try:
        status, _ = await asyncio.wait_for(connection.post(body), timeout)
    finally:
        await connection.close()
    if status != 200:
        raise RuntimeError(f"the proxy answered {status} to a warm-up request")


if __name__ == "__main__":
    sys.exit(main())
