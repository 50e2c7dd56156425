"""Ingest + mining speed and memory against a floor, on a Hermes-shaped database.

Generates (once, cached under ``benchmarks/out/``) a Hermes ``state.db`` shaped like
the τ-bench corpus (default 20,000 sessions, about 1,000,000 messages), then, each
in a fresh process so peak memory is its own:

(a) the floor: one SQL scan of ``messages`` that parses every ``tool_calls`` JSON;
(b) ``warmstart ingest`` of the same file into a new SQLite store (reading, pairing,
    judging, recovery detection, classification and writing everything).

Prints floor/warmstart as a ratio (target: at least 0.5) and warmstart's peak RSS
(target: at most 300 MB), plus a re-ingest of the unchanged file.

    python benchmarks/mine_bench.py [--sessions 20000] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RATIO_FLOOR = 0.5
RSS_CEILING_MB = 300

FLOOR_CODE = """
import json, resource, sqlite3, sys, time
t = time.perf_counter()
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
n = calls = 0
for (raw,) in conn.execute("SELECT tool_calls FROM messages"):
    n += 1
    if raw:
        calls += len(json.loads(raw))
elapsed = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": elapsed, "rss_mb": rss, "messages": n, "calls": calls}))
"""

INGEST_CODE = """
import json, resource, sys, time
from warmstart.config import MiningConfig
from warmstart.ingestion import ingest
t = time.perf_counter()
report = ingest(sys.argv[1], db=sys.argv[2], config=MiningConfig())
elapsed = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": elapsed, "rss_mb": rss, "report": report.as_dict()}))
"""


def run(code: str, *args: str) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; return the JSON it prints last."""
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        sys.exit(f"benchmark step failed:\n{out.stderr}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from hermes_db import generate

    out_dir = HERE / "out"
    out_dir.mkdir(exist_ok=True)
    db_path = out_dir / f"hermes-{args.sessions}-{args.seed}.db"
    if not db_path.exists():
        t = time.perf_counter()
        counts = generate(db_path, sessions=args.sessions, seed=args.seed)
        print(f"generated {db_path.name}: {counts} in {time.perf_counter() - t:.1f} s")
    floor = run(FLOOR_CODE, str(db_path))
    print(
        f"floor  (SQL scan + json.loads of tool_calls): {floor['seconds']:.2f} s, "
        f"{floor['messages']:,} messages, {floor['calls']:,} calls, "
        f"peak RSS {floor['rss_mb']:.0f} MB"
    )
    with tempfile.TemporaryDirectory(prefix="warmstart-mine-bench-") as tmp:
        store = f"sqlite:///{Path(tmp) / 'store.db'}"
        first = run(INGEST_CODE, str(db_path), store)
        report = first["report"]
        assert isinstance(report, dict)
        print(
            f"warmstart ingest + mining: {first['seconds']:.2f} s, "
            f"{report['added']:,} sessions, {report['messages']:,} messages, "
            f"{report['calls']:,} calls, {report['failures']:,} judged failed, "
            f"peak RSS {first['rss_mb']:.0f} MB"
        )
        again = run(INGEST_CODE, str(db_path), store)
        again_report = again["report"]
        assert isinstance(again_report, dict)
        print(
            f"re-ingest unchanged file: {again['seconds']:.2f} s "
            f"({again_report['unchanged']:,} unchanged, {again_report['added']} added)"
        )
    ratio = float(floor["seconds"]) / float(first["seconds"])  # type: ignore[arg-type]
    rss = float(first["rss_mb"])  # type: ignore[arg-type]
    ok_ratio = ratio >= RATIO_FLOOR
    ok_rss = rss <= RSS_CEILING_MB
    print(
        f"ratio floor/warmstart = {ratio:.2f} (target >= {RATIO_FLOOR}): "
        f"{'PASS' if ok_ratio else 'FAIL'}"
    )
    print(
        f"peak RSS = {rss:.0f} MB (target <= {RSS_CEILING_MB} MB): {'PASS' if ok_rss else 'FAIL'}"
    )
    return 0 if ok_ratio and ok_rss else 1


if __name__ == "__main__":
    sys.exit(main())
