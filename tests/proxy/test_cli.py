"""``warmstart proxy`` run as a user runs it: a real process on a real port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from tests.support.openai_double import OpenAIDouble, text

from warmstart.inject import ADDENDUM

LAUNCH = ["-m", "warmstart"]


def run_main(
    args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    """Run the console entry point in-process (fast) and return (exit code, stderr)."""
    from warmstart.cli import main

    monkeypatch.setattr(sys, "argv", ["warmstart", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    return int(exited.value.code or 0), capsys.readouterr().err


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--upstream", "http://127.0.0.1:9/v1", "--ab", "0.5"],
            "error: --ab: an A/B test needs --template or --auto",
        ),
        (
            ["--upstream", "http://h/v1", "--max-body", "lots"],
            "error: --max-body: 'lots' is not a size like 32MB or 512k",
        ),
        (
            ["--upstream", "ftp://x"],
            "error: invalid proxy options: upstream: Value error, upstream must be an http(s) "
            "URL like https://host/v1, got 'ftp://x'",
        ),
        (
            ["--upstream", "http://h/v1", "--template", "a", "--auto"],
            "error: invalid proxy options: options: Value error, choose either a template or "
            "auto, not both",
        ),
    ],
    ids=["ab-alone", "size", "scheme", "template-and-auto"],
)
def test_bad_options_are_one_red_line(
    args: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, stderr = run_main(["proxy", *args], monkeypatch, capsys)
    assert code == 1
    assert " ".join(stderr.split()) == message


def test_an_unknown_template_stops_the_command_before_serving(
    store_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["proxy", "--upstream", "http://127.0.0.1:9/v1", "--template", "nope", "--db", store_url]
    code, stderr = run_main(args, monkeypatch, capsys)
    assert code == 1
    assert " ".join(stderr.split()) == (
        "error: no template 'nope' in the store (see `warmstart templates list`)"
    )


def test_the_command_serves_until_interrupted(
    warmstart_home: Path, store_url: str, openai_double: OpenAIDouble
) -> None:
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable, *LAUNCH, "proxy",
            "--upstream", openai_double.base_url, "--port", str(port),
            "--template", "airline", "--db", store_url, "--context-length", "128000",
            "--record",
        ],
        env={**os.environ, "WARMSTART_HOME": str(warmstart_home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + 30
        while True:
            try:
                models = httpx.get(f"{base}/models", timeout=2)
                break
            except httpx.HTTPError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the proxy did not start: {process.communicate()[1]}")
                time.sleep(0.1)
        assert models.json()["data"][0]["id"] == "double-model"
        openai_double.enqueue(text("hello"))
        answer = httpx.post(
            f"{base}/chat/completions",
            json={"model": "double-model", "messages": [{"role": "user", "content": "change"}]},
            timeout=10,
        )
        assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"]
        assert answer.headers["x-warmstart-warm"].startswith("warm; template=airline")
        assert openai_double.chat_requests[0]["messages"][0]["content"] == ADDENDUM
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=20)
    assert process.returncode in (0, 130, -signal.SIGINT)
    assert f"proxy on http://127.0.0.1:{port}/v1 -> {openai_double.base_url}" in stderr
    assert "template 'airline'" in stderr and "recording to sqlite:///" in stderr
