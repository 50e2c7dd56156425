"""Durability: kill -9 with requests pending loses nothing; racing approvers, one wins."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.gate.conftest import RunningGate, free_port

SERVE = "from warmstart.cli import main; main()"


class GateProcess:
    """``warmstart gate serve`` in a child process."""

    def __init__(self, db_url: str, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log.open("ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                SERVE,
                "gate",
                "serve",
                "--port",
                str(self.port),
                "--db",
                db_url,
                "--log-level",
                "warning",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"gate did not start: {log.read_text()[-2000:]}")
            time.sleep(0.1)

    def kill9(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.log.close()


@pytest.fixture
def processes() -> Iterator[list[GateProcess]]:
    started: list[GateProcess] = []
    yield started
    for proc in started:
        proc.stop()


def test_kill_9_with_requests_pending_loses_nothing(
    tmp_path: Path, processes: list[GateProcess]
) -> None:
    # SQLite is the default store; PostgreSQL reopening is covered in test_store.
    db_url = f"sqlite:///{tmp_path / 'gate.db'}"
    first = GateProcess(db_url, tmp_path / "gate.log")
    processes.append(first)
    submitted: list[dict[str, Any]] = []
    for i, timeout in enumerate((60, 300, 3600)):
        resp = httpx.post(
            f"{first.url}/confirm",
            json={
                "action": "migrate_database",
                "description": f"step {i}",
                "details": {"step": i},
                "timeout_seconds": timeout,
            },
        )
        submitted.append(resp.json())
    httpx.post(f"{first.url}/confirm/{submitted[0]['id']}/deny", json={"reason": "no"})
    first.kill9()

    second = GateProcess(db_url, tmp_path / "gate.log")
    processes.append(second)
    after = {r["id"]: r for r in httpx.get(f"{second.url}/confirm", params={"limit": 10}).json()}
    assert set(after) == {r["id"] for r in submitted}
    assert after[submitted[0]["id"]]["status"] == "denied"
    for before in submitted[1:]:
        again = after[before["id"]]
        assert again["status"] == "pending"
        assert again["expires_at"] == before["expires_at"]
        assert again["binding_hash"] == before["binding_hash"]
    approved = httpx.post(f"{second.url}/confirm/{submitted[1]['id']}/approve")
    assert approved.json()["status"] == "approved"
    assert httpx.get(f"{second.url}/audit/verify").json()["ok"] is True


def test_racing_approvers_over_http_exactly_one_wins(
    db_url: str, make_settings: Any, start_gate: Any
) -> None:
    gate: RunningGate = start_gate(make_settings(db_url=db_url))
    with httpx.Client(base_url=gate.url) as http:
        ids = [
            http.post("/confirm", json={"action": "a", "description": "d"}).json()["id"]
            for _ in range(5)
        ]
    for request_id in ids:
        barrier = threading.Barrier(2)
        codes: list[int] = []

        def decide(
            path: str,
            body: dict[str, str],
            rid: str = request_id,
            gate_barrier: threading.Barrier = barrier,
            out: list[int] = codes,
        ) -> None:
            gate_barrier.wait()
            out.append(httpx.post(f"{gate.url}/confirm/{rid}/{path}", json=body).status_code)

        threads = [
            threading.Thread(target=decide, args=("approve", {"approver": "alice"})),
            threading.Thread(target=decide, args=("deny", {"approver": "bob", "reason": "no"})),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(codes) == [200, 409]
    assert httpx.get(f"{gate.url}/audit/verify").json()["ok"] is True
