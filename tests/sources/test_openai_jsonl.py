"""OpenAI chat JSONL: one session per line; bad lines counted, never fatal."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from warmstart.sources import detect_source
from warmstart.sources.base import IngestReport
from warmstart.sources.openai_jsonl import OpenAIJsonlSource

GOOD = {
    "id": "conv-1",
    "model": "gpt-4o",
    "outcome": "success",
    "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {}}}],
    "messages": [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": [{"type": "text", "text": "read a.txt"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": {"path": "a.txt"}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "hello"},
        {"role": "assistant", "content": "It says hello."},
    ],
}


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_reads_a_session_with_every_field(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [json.dumps(GOOD)])
    assert detect_source(path).name == "openai-jsonl"
    report = IngestReport()
    [s] = list(OpenAIJsonlSource().iter_sessions(path, report, {}))
    assert s.key == "openai-jsonl:conv-1"
    assert s.outcome == 1.0 and s.model == "gpt-4o" and s.tools == ["read_file"]
    assert [m.role for m in s.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert s.messages[1].content == "read a.txt"
    assert s.messages[2].tool_calls[0].arguments == '{"path": "a.txt"}'
    assert not report.skipped


def test_bad_lines_are_counted_and_the_rest_read(tmp_path: Path) -> None:
    bad_call = dict(GOOD, id="conv-2")
    bad_call["messages"] = [
        {"role": "wizard", "content": "?"},
        {"role": "assistant", "tool_calls": "{not json"},
        {"role": "assistant", "tool_calls": [{"id": "x", "function": {"arguments": "{}"}}]},
        {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]},
    ]
    path = write_lines(
        tmp_path / "s.jsonl",
        [
            "{not json",
            json.dumps({"id": "no-messages"}),
            "",
            json.dumps(bad_call),
            json.dumps(GOOD),
        ],
    )
    report = IngestReport()
    sessions = list(OpenAIJsonlSource().iter_sessions(path, report, {}))
    assert [s.external_id for s in sessions] == ["conv-2", "conv-1"]
    assert report.skipped == {
        "line is not JSON": 1,
        "line has no 'messages' list": 1,
        "unknown role 'wizard'": 1,
        "tool_calls is not JSON": 1,
        "tool call has no function name": 1,
        "tool call has no id": 1,
        "tool call arguments are not JSON": 1,
    }
    # Non-JSON arguments are kept raw for the miner to judge.
    assert sessions[0].messages[-1].tool_calls[0].arguments == "{oops"
    assert any("line 1" in e for e in report.examples)


def test_gzip_and_known_fingerprints(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps(GOOD) + "\n")
    first = list(OpenAIJsonlSource().iter_sessions(path, IngestReport(), {}))
    report = IngestReport()
    again = list(
        OpenAIJsonlSource().iter_sessions(path, report, {first[0].key: first[0].fingerprint})
    )
    assert again == [] and report.unchanged == 1


def test_line_without_id_gets_a_stable_content_id(tmp_path: Path) -> None:
    line = json.dumps({"messages": GOOD["messages"]})
    path = write_lines(tmp_path / "s.jsonl", [line])
    a = list(OpenAIJsonlSource().iter_sessions(path, IngestReport(), {}))
    b = list(OpenAIJsonlSource().iter_sessions(path, IngestReport(), {}))
    assert a[0].external_id == b[0].external_id and a[0].external_id.startswith("sha1-")
