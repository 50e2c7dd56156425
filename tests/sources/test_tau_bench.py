"""τ-bench trajectories: streamed item by item, reward kept, damage counted."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from warmstart.errors import SourceError, UnknownSourceError
from warmstart.sources import detect_source
from warmstart.sources.base import IngestReport
from warmstart.sources.files import iter_json_array
from warmstart.sources.tau_bench import TauBenchSource


def test_bundled_corpus_reads_whole(tau_sample: Path) -> None:
    assert detect_source(tau_sample).name == "tau-bench"
    report = IngestReport()
    sessions = list(TauBenchSource().iter_sessions(tau_sample, report, {}))
    assert len(sessions) == 200
    assert sum(1 for s in sessions if s.outcome == 1.0) == 84
    assert sum(1 for s in sessions if s.outcome == 0.0) == 116
    calls = [c for s in sessions for m in s.messages for c in m.tool_calls]
    assert len(calls) == 1164
    assert sessions[0].messages[0].role == "system"
    assert sessions[0].external_id == "tau_bench_airline/0/0"
    assert not report.skipped


def test_truncated_array_yields_what_precedes_the_damage(tau_sample: Path, tmp_path: Path) -> None:
    with gzip.open(tau_sample, "rt", encoding="utf-8") as fh:
        text = fh.read()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2], encoding="utf-8")
    report = IngestReport()
    sessions = list(TauBenchSource().iter_sessions(cut, report, {}))
    assert 50 < len(sessions) < 150
    assert report.skipped["JSON array is truncated"] == 1


def test_items_of_the_wrong_shape_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(
        json.dumps(
            [
                {
                    "task_id": 1,
                    "trial": 0,
                    "reward": 1.0,
                    "traj": [{"role": "user", "content": "hi"}],
                },
                {"task_id": 2, "traj": "nope"},
                7,
            ]
        )
    )
    report = IngestReport()
    sessions = list(TauBenchSource().iter_sessions(path, report, {}))
    assert [s.external_id for s in sessions] == ["t/1/0"]
    assert report.skipped == {"trajectory has no 'traj' list": 1, "trajectory is not an object": 1}


def test_json_array_reader_handles_items_across_chunks(tmp_path: Path) -> None:
    items = [{"k": "x" * 100_000, "i": i} for i in range(3)]
    path = tmp_path / "big.json"
    path.write_text(json.dumps(items))
    with path.open() as fh:
        got = list(iter_json_array(fh, IngestReport(), "big"))
    assert [g["i"] for g in got] == [0, 1, 2]


def test_not_an_array_and_unknown_inputs(tmp_path: Path) -> None:
    path = tmp_path / "obj.json"
    path.write_text('{"a": 1}')
    with path.open() as fh, pytest.raises(SourceError, match="not a JSON array"):
        list(iter_json_array(fh, IngestReport(), str(path)))
    with pytest.raises(UnknownSourceError, match="not a recognised session log"):
        detect_source(path)
    with pytest.raises(SourceError, match="no such file"):
        detect_source(tmp_path / "missing.json")
    with pytest.raises(SourceError, match="is a directory"):
        detect_source(tmp_path)
