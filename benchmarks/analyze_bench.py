"""How fast, and in how much memory, does ``warmstart analyze`` run on 1,000,000 messages?

Builds (or reuses) a store of about 1,000,000 messages: a Hermes ``state.db`` from
``benchmarks/hermes_db.py`` (20,000 sessions shaped like the τ-bench corpus)
ingested with ``warmstart.ingestion``; without ``hermes_db.py``, rows go straight into
the store's tables. Then it times ``analyze`` against a floor measured in the same
run: one ``SELECT tool, COUNT(*), SUM(failed) FROM tool_calls GROUP BY tool`` pass,
the least any per-tool error report must do (on SQLite both with the planner's own
plan and forced to a sequential scan, the faster counting). Every measurement runs
in a fresh subprocess, which reports its wall time and its peak RSS
(``resource.getrusage``). Floor and analyze alternate, after one warm-up each, so
both see the same page cache and the same neighbours on a shared machine.

Targets: analyze within 5x the floor (best of the rounds), peak RSS <= 400 MB.

    python benchmarks/analyze_bench.py [--sessions 20000] [--rounds 3] [--db URL]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
TARGET_RATIO = 5.0
TARGET_RSS_MB = 400.0


# -- building the store --------------------------------------------------------------


def build_store(url: str, sessions: int, seed: int) -> str:
    """Fill the store at ``url`` with ``sessions`` sessions; say how."""
    sys.path.insert(0, str(HERE))
    try:
        import hermes_db
    except ImportError:
        direct_store(url, sessions, seed)
        return "rows inserted directly (benchmarks/hermes_db.py not found)"
    import warmstart

    state = OUT / f"analyze-hermes-{sessions}-{seed}.db"
    counts = hermes_db.generate(state, sessions=sessions, seed=seed)
    report = warmstart.ingest(state, db=url)
    for suffix in ("", "-wal", "-shm"):  # the Hermes file is only a means to the store
        Path(f"{state}{suffix}").unlink(missing_ok=True)
    return f"hermes_db.generate {counts} + warmstart.ingestion ({report.messages:,} messages)"


_TOOLS = ("execute_code", "terminal", "read_file", "write_file", "patch", "web_search",
          "search_files", "web_fetch")  # fmt: skip


def direct_store(url: str, sessions: int, seed: int) -> None:
    """Insert sessions, messages and mined calls straight into the store's tables.

    Shaped like the Hermes generator: 20-80 messages a session (1 in 20 a
    marathon of 100-200), a tool round after most user turns, ~6% failed calls,
    some recovered.
    """
    from warmstart.store import Store, schema

    rng = random.Random(seed)
    engine = Store(url).engine
    s_rows: list[dict[str, Any]] = []
    m_rows: list[dict[str, Any]] = []
    c_rows: list[dict[str, Any]] = []

    def flush() -> None:
        with engine.begin() as conn:
            conn.execute(schema.sessions.insert(), s_rows)
            conn.execute(schema.messages.insert(), m_rows)
            conn.execute(schema.tool_calls.insert(), c_rows)
        for rows in (s_rows, m_rows, c_rows):
            rows.clear()

    clock = 1_735_689_600.0
    for n in range(sessions):
        key = f"bench:{n:06d}"
        target = rng.randint(100, 200) if rng.random() < 0.05 else rng.randint(20, 80)
        start = clock = clock + rng.uniform(60, 600)
        msgs: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        turn = -1
        while len(msgs) < target:
            clock += 1
            msgs.append({"role": "user", "content": "please fix the failing build", "ts": clock})
            for _ in range(rng.choice((0, 1, 1, 2))):
                turn += 1
                tool = rng.choice(_TOOLS)
                ok = rng.random() > 0.06
                clock += 0.5
                msgs.append({"role": "assistant", "content": None, "ts": clock})
                calls.append(
                    {
                        "session_id": key, "idx": len(calls), "call_id": f"c{len(calls)}",
                        "tool": tool, "arguments_json": '{"path": "src/app.py"}',
                        "args_valid": True, "turn": turn, "message_idx": len(msgs) - 1,
                        "result": "ok " * 60 if ok else "Error: file src/app.py not found",
                        "result_chars": 180 if ok else 32, "paired_by": "id", "ok": ok,
                        "error_kind": None if ok else "error-prefix",
                        "evidence": None if ok else "Error: file src/app.py not found",
                        "intent": "please fix the failing build", "timestamp": clock,
                        "trivial": False, "retry_of": None,
                        "recovered_by": None if ok or rng.random() < 0.5 else len(calls) + 1,
                    }
                )  # fmt: skip
                msgs.append({"role": "tool", "content": "ok", "ts": clock + 0.1})
            turn += 1
            msgs.append({"role": "assistant", "content": "done", "ts": clock + 0.5})
        failures = sum(1 for c in calls if not c["ok"])
        s_rows.append(
            {
                "id": key, "source": "bench", "external_id": f"{n:06d}", "origin": "bench",
                "model": "gpt-4o", "started_at": start, "ended_at": clock,
                "end_reason": "error" if rng.random() < 0.1 else "cli_close",
                "task_type": "mixed", "n_messages": len(msgs), "n_calls": len(calls),
                "n_failures": failures, "n_distinct_tools": len({c["tool"] for c in calls}),
                "n_recoveries": sum(1 for c in calls if c["recovered_by"] is not None),
                "first_success_turn": next((c["turn"] for c in calls if c["ok"]), None),
                "fingerprint": key, "metadata_json": "{}", "ingested_at": time.time(),
            }
        )  # fmt: skip
        m_rows.extend(
            {"session_id": key, "idx": i, "role": m["role"], "content": m["content"],
             "content_chars": len(m["content"] or ""), "timestamp": m["ts"]}
            for i, m in enumerate(msgs)
        )  # fmt: skip
        c_rows.extend(calls)
        if len(m_rows) >= 50_000:
            flush()
    if s_rows:
        flush()


# -- one measurement (run in a child process) ----------------------------------------


def measure(kind: str, url: str, workers: int = 2) -> dict[str, float]:
    """Time one floor pass or one analyze; the caller reads peak RSS from the result."""
    from sqlalchemy import case, func, select

    from warmstart.store import Store, schema

    engine = Store(url).engine  # opening (and the migration check) is not timed
    c = schema.tool_calls.c
    cpu0 = _cpu()
    started = time.perf_counter()
    if kind == "floor":
        failed = func.sum(case((c.ok, 0), else_=1))
        query = select(c.tool, func.count(), failed).group_by(c.tool)
        with engine.connect() as conn:
            rows = conn.execute(query).all()
            best = time.perf_counter() - started
            cpu = _cpu() - cpu0
            if conn.dialect.name == "sqlite":  # the sequential plan may be faster
                t0, c0 = time.perf_counter(), _cpu()
                conn.exec_driver_sql(
                    "SELECT tool, COUNT(*), SUM(CASE WHEN ok THEN 0 ELSE 1 END) "
                    "FROM tool_calls NOT INDEXED GROUP BY tool"
                ).all()
                seq, seq_cpu = time.perf_counter() - t0, _cpu() - c0
                extra = {"planned": best, "sequential": seq}
                best, cpu = min(best, seq), min(cpu, seq_cpu)
            else:
                extra = {"planned": best}
        elapsed, extra = best, {**extra, "tools": float(len(rows))}
    elif kind == "analyze":
        from warmstart.analytics import analyze

        analysis = analyze(url, workers=workers)
        elapsed, cpu = time.perf_counter() - started, _cpu() - cpu0
        extra = {"calls": float(analysis.calls)}
    elif kind == "report":
        from warmstart.analytics import analyze, render_report

        html = render_report(analyze(url, workers=workers))
        elapsed, cpu = time.perf_counter() - started, _cpu() - cpu0
        extra = {"html_kb": len(html) / 1024}
    else:
        raise SystemExit(f"unknown measurement {kind!r}")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"seconds": elapsed, "cpu": cpu, "peak_rss_mb": peak_mb, **extra}


def _cpu() -> float:
    """CPU seconds of this process, all threads (SQLite runs in-process)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_child(
    kind: str, url: str, workers: int = 2, sessions: int = 20_000, seed: int = 0
) -> dict[str, Any]:
    """One step in a fresh interpreter, so a measurement's peak RSS is its own."""
    args = ["--measure", kind, "--db", url, "--workers", str(workers)]
    args += ["--sessions", str(sessions), "--seed", str(seed)]
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=False
    )
    if out.returncode:
        raise SystemExit(f"{kind} failed:\n{out.stderr}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# -- main ----------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--db", help="use this store URL (built first if empty)")
    parser.add_argument("--workers", type=int, default=2, help="analyze's connections")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    url = args.db or f"sqlite:///{OUT / f'analyze-store-{args.sessions}-{args.seed}.db'}"
    if args.measure == "build":
        t0 = time.perf_counter()
        how = build_store(url, args.sessions, args.seed)
        print(json.dumps({"seconds": time.perf_counter() - t0, "how": how}))
        return 0
    if args.measure == "totals":
        print(json.dumps(_totals(url)))
        return 0
    if args.measure:
        print(json.dumps(measure(args.measure, url, args.workers)))
        return 0

    # This process stays lean (no warmstart or SQLAlchemy import, no ingest): Linux
    # carries a parent's peak RSS into ru_maxrss of the children it forks, so every
    # step, even counting and building, runs in a child of its own.
    totals = run_child("totals", url)
    if totals["sessions"] < args.sessions:
        built = run_child("build", url, sessions=args.sessions, seed=args.seed)
        print(f"built the store in {built['seconds']:.0f} s: {built['how']}")
        totals = run_child("totals", url)
    else:
        print(f"reusing the store ({totals['sessions']:,} sessions)")
    print(
        f"store: {totals['sessions']:,} sessions, {totals['messages']:,} messages, "
        f"{totals['calls']:,} tool calls"
    )

    run_child("floor", url)  # warm-up: the page cache, not the figures
    run_child("analyze", url, args.workers)
    floors, analyses = [], []
    for _ in range(args.rounds):
        floors.append(run_child("floor", url))
        analyses.append(run_child("analyze", url, args.workers))
    report = run_child("report", url, args.workers)

    f_best = min(r["seconds"] for r in floors)
    a_best = min(r["seconds"] for r in analyses)
    f_med = statistics.median(r["seconds"] for r in floors)
    a_med = statistics.median(r["seconds"] for r in analyses)
    rss = max(r["peak_rss_mb"] for r in analyses)
    ratio = a_best / f_best
    cpu_ratio = min(r["cpu"] for r in analyses) / min(r["cpu"] for r in floors)
    planned = min(r["planned"] for r in floors)
    seq = min((r["sequential"] for r in floors if "sequential" in r), default=None)
    how = f"planner's plan {planned:.3f} s" + ("" if seq is None else f", sequential {seq:.3f} s")
    print(
        f"floor (GROUP BY tool over tool_calls, the faster plan): best {f_best:.3f} s "
        f"({how}), median {f_med:.3f} s, peak RSS "
        f"{max(r['peak_rss_mb'] for r in floors):.0f} MB"
    )
    rounds = ", ".join(f"{r['seconds']:.2f}" for r in analyses)
    print(
        f"analyze: best {a_best:.3f} s, median {a_med:.3f} s, peak RSS {rss:.0f} MB "
        f"(rounds: {rounds} s)"
    )
    print(
        f"report (analyze + HTML): {report['seconds']:.3f} s, {report['html_kb']:.0f} KB, "
        f"peak RSS {report['peak_rss_mb']:.0f} MB"
    )
    ok_time = ratio <= TARGET_RATIO
    ok_rss = rss <= TARGET_RSS_MB
    print(
        f"time: {ratio:.2f}x the floor (target <= {TARGET_RATIO:g}x; median ratio "
        f"{a_med / f_med:.2f}x; CPU {cpu_ratio:.2f}x with {args.workers} connections; "
        f"{a_best / planned:.2f}x the planner's own GROUP BY plan): "
        f"{'PASS' if ok_time else 'FAIL'}"
    )
    print(
        f"memory: peak RSS {rss:.0f} MB (target <= {TARGET_RSS_MB:g} MB): "
        f"{'PASS' if ok_rss else 'FAIL'}"
    )
    return 0 if ok_time and ok_rss else 1


def _totals(url: str) -> dict[str, int]:
    from sqlalchemy import func, select

    from warmstart.store import Store, schema

    with Store(url).engine.connect() as conn:
        return {
            name: int(conn.execute(select(func.count()).select_from(table)).scalar_one())
            for name, table in (
                ("sessions", schema.sessions),
                ("messages", schema.messages),
                ("calls", schema.tool_calls),
            )
        }


if __name__ == "__main__":
    sys.exit(main())
