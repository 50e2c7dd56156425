"""Load benchmark of the approval gate: concurrent agents submit, a decider approves.

Starts a gate on a temporary SQLite database (or uses ``--url``), runs ``--clients``
agents that each submit a request and long-poll for its decision, while a decider
follows ``/events`` and approves every new request. Prints decided requests per
second, p50/p99 latency from submission to the agent seeing the approval, and lost
requests (submitted but never seen decided), against a floor of 300 decisions/s.

    .venv/bin/python benchmarks/gate_bench.py --requests 2000 --clients 32
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

FLOOR = 300.0

SERVER = """
from warmstart.gate.server import serve
from warmstart.gate.settings import GateSettings
serve(GateSettings(port={port}, db_url={db!r}, rate_limit=0,
                   max_pending_per_requester=1_000_000), log_level="error")
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Http:
    """A minimal keep-alive HTTP/1.1 JSON client on asyncio streams.

    The load generator shares two cores with the gate; a general-purpose client such
    as httpx spends more CPU per request than the gate does, and the benchmark would
    then measure the client. Responses must carry Content-Length (the gate's do).
    """

    def __init__(self, host: str, port: int, headers: dict[str, str]) -> None:
        self.host, self.port = host, port
        self.extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        payload = json.dumps(body).encode() if body is not None else b""
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\n{self.extra}"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
        )
        self.writer.write(head.encode() + payload)
        assert self.reader is not None
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.lower() == "content-length":
                length = int(value)
        data = await self.reader.readexactly(length)
        return status, json.loads(data) if data else None

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()


async def sse_events(host: str, port: int, headers: dict[str, str]) -> AsyncIterator[str]:
    """Yield ``event: ...``/``data: ...`` blocks of /events (chunked transfer)."""
    reader, writer = await asyncio.open_connection(host, port)
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    writer.write(f"GET /events HTTP/1.1\r\nHost: {host}\r\n{extra}\r\n".encode())
    try:
        await reader.readuntil(b"\r\n\r\n")
        pending = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            if size == 0:
                return
            pending += await reader.readexactly(size)
            await reader.readexactly(2)
            *blocks, pending = pending.split(b"\n\n")
            for block in blocks:
                yield block.decode()
    finally:
        writer.close()


def start_server(db_url: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    code = SERVER.format(port=port, db=db_url)
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-c", code], stderr=sink)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
        if proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit(f"the gate did not start: {log.read_text()[-2000:]}")


async def decider(
    host: str, port: int, headers: dict[str, str], workers: int, ready: asyncio.Event
) -> None:
    """Follow /events and approve every submitted request."""
    queue: asyncio.Queue[str] = asyncio.Queue()

    async def approve_loop() -> None:
        http = Http(host, port, headers)
        try:
            while True:
                request_id = await queue.get()
                status, body = await http.request("POST", f"/confirm/{request_id}/approve", {})
                if status not in (200, 409):
                    print(f"approve {request_id}: {status} {body}", file=sys.stderr)
        finally:
            await http.close()

    tasks = [asyncio.create_task(approve_loop()) for _ in range(workers)]
    try:
        async for block in sse_events(host, port, headers):
            if ": connected" in block:
                ready.set()
            if block.startswith("event: submitted"):
                data = json.loads(block.rsplit("data: ", 1)[1])
                if data["status"] == "pending":
                    queue.put_nowait(data["id"])
    finally:
        for task in tasks:
            task.cancel()


async def agent(
    host: str,
    port: int,
    headers: dict[str, str],
    jobs: asyncio.Queue[int],
    latencies: list[float],
    lost: list[str],
) -> None:
    """Submit, then long-poll until decided; repeat until the jobs run out."""
    http = Http(host, port, headers)
    try:
        while True:
            try:
                n = jobs.get_nowait()
            except asyncio.QueueEmpty:
                return
            started = time.perf_counter()
            body = {"action": "deploy_production", "description": f"bench {n}", "details": {"n": n}}
            status, view = await http.request("POST", "/confirm", body)
            if status != 202:
                lost.append(f"submit {n}: {status} {view}")
                continue
            deadline = time.monotonic() + 60
            while view["status"] == "pending" and time.monotonic() < deadline:
                _, view = await http.request("GET", f"/confirm/{view['id']}/wait?timeout=30")
            if view["status"] == "approved":
                latencies.append(time.perf_counter() - started)
            else:
                lost.append(f"{view['id']}: {view['status']}")
    finally:
        await http.close()


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process (Linux /proc), 0 when unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


async def run(
    url: str,
    token: str | None,
    requests: int,
    clients: int,
    deciders: int,
    server_pid: int | None = None,
) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    ready = asyncio.Event()
    decide_task = asyncio.create_task(decider(host, port, headers, deciders, ready))
    await asyncio.wait_for(ready.wait(), 10)
    jobs: asyncio.Queue[int] = asyncio.Queue()
    for n in range(requests):
        jobs.put_nowait(n)
    latencies: list[float] = []
    lost: list[str] = []
    started = time.perf_counter()
    cpu_before = cpu_seconds(server_pid) if server_pid else 0.0
    self_before = time.process_time()
    await asyncio.gather(
        *(agent(host, port, headers, jobs, latencies, lost) for _ in range(clients))
    )
    elapsed = time.perf_counter() - started
    server_cpu = cpu_seconds(server_pid) - cpu_before if server_pid else 0.0
    client_cpu = time.process_time() - self_before
    decide_task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await decide_task

    rate = len(latencies) / elapsed
    ordered = sorted(latencies)
    p50 = statistics.median(ordered) * 1000 if ordered else float("nan")
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000 if ordered else 0.0
    verdict = "meets" if rate >= FLOOR else "BELOW"
    print(
        f"requests     {requests} submitted by {clients} concurrent clients, "
        f"{deciders} approving workers"
    )
    print(f"decided      {len(latencies)} in {elapsed:.2f} s")
    print(f"throughput   {rate:.0f} decisions/s ({verdict} the floor of {FLOOR:.0f}/s)")
    print(f"latency      p50 {p50:.1f} ms, p99 {p99:.1f} ms (submit -> agent sees approval)")
    print(f"lost         {len(lost)}")
    if latencies and server_pid:
        per = server_cpu / len(latencies) * 1000
        print(
            f"cpu          gate {per:.2f} ms per decision (one core: "
            f"{1000 / per if per else 0:.0f} decisions/s), clients "
            f"{client_cpu / len(latencies) * 1000:.2f} ms; load average "
            f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
        )
    for line in lost[:10]:
        print(f"  {line}")
    return 0 if not lost and rate >= FLOOR else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--deciders", type=int, default=8, help="concurrent approve calls")
    parser.add_argument("--url", help="use a running gate instead of starting one")
    parser.add_argument(
        "--token",
        default=os.environ.get("WARMSTART_GATE_TOKEN"),
        help="token with both roles (only with --url and tokens configured)",
    )
    parser.add_argument("--db", help="database URL for the started gate (default: temp SQLite)")
    args = parser.parse_args()
    if args.url:
        return asyncio.run(run(args.url, args.token, args.requests, args.clients, args.deciders))
    with tempfile.TemporaryDirectory() as tmp:
        db_url = args.db or f"sqlite:///{Path(tmp) / 'gate-bench.db'}"
        log = Path(tmp) / "gate.log"
        proc, url = start_server(db_url, log)
        try:
            print(f"gate         {url} on {db_url.split(':', 1)[0]}")
            return asyncio.run(run(url, None, args.requests, args.clients, args.deciders, proc.pid))
        except Exception:
            print(f"gate log:\n{log.read_text()[-3000:]}", file=sys.stderr)
            raise
        finally:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)


if __name__ == "__main__":
    sys.exit(main())
