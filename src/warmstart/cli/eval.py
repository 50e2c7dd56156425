"""`warmstart eval offline|ab|show|list`: measure whether warm starts help."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Annotated, Any

import typer

from warmstart.cli.app import app, console, console_err
from warmstart.cli.options import (
    CsvFlag,
    DbOption,
    JsonFlag,
    NlFlag,
    fmt_time,
    output_mode,
    print_json,
    print_rows,
)

eval_app = typer.Typer(
    help="Measure warm starts: offline replay on stored sessions, online A/B runs on a model.",
    no_args_is_help=True,
)
app.add_typer(eval_app, name="eval")

AB_COLUMNS = ["metric", "cold", "warm", "warm - cold", "p", "pairs"]
OFFLINE_COLUMNS = [
    "strategy",
    "budget",
    "tool recall",
    "error coverage",
    "error tool cov.",
    "tokens",
    "examples",
]


def _ints(value: str, option: str) -> tuple[int, ...]:
    try:
        out = tuple(int(v) for v in value.split(",") if v.strip())
    except ValueError as exc:
        raise typer.BadParameter(
            f"{value!r} is not a comma-separated list of integers", param_hint=option
        ) from exc
    if not out:
        raise typer.BadParameter("give at least one value", param_hint=option)
    return out


@contextlib.contextmanager
def _progress(label: str) -> Iterator[Any]:
    """A progress bar on a terminal; a no-op callback when piped."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import Progress

    with Progress(console=console_err, transient=True) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int, *_: Any) -> None:
            bar.update(task, completed=done, total=total)

        yield update


@eval_app.command("offline")
def offline(
    source: Annotated[str | None, typer.Option(help="Only sessions from this source.")] = None,
    budgets: Annotated[str, typer.Option(help="Token budgets, comma-separated.")] = (
        "500,1000,2000,4000"
    ),
    strategies: Annotated[
        str, typer.Option(help="Strategies: naive, random-k, warmstart, warmstart+task.")
    ] = "naive,random-k,warmstart,warmstart+task",
    test_share: Annotated[float, typer.Option(help="Share of tasks held out for testing.")] = 0.25,
    seed: Annotated[int, typer.Option(help="Seed of the split, random draws and bootstrap.")] = 0,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples.")] = 2000,
    random_k: Annotated[
        int | None, typer.Option(help="Trajectories random-k draws (default: all that fit).")
    ] = None,
    save: Annotated[bool, typer.Option(help="Store the result as an experiment.")] = True,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print a Markdown table.")] = False,
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Score warm-history strategies on held-out sessions (no model needed)."""
    from warmstart.evaluate.offline import OfflineConfig, evaluate_offline

    config = OfflineConfig(
        budgets=_ints(budgets, "--budgets"),
        strategies=tuple(s.strip() for s in strategies.split(",") if s.strip()),
        test_share=test_share,
        seed=seed,
        resamples=resamples,
        source=source,
        random_k=random_k,
    )
    with _progress("scoring strategies") as update:
        report = evaluate_offline(db, config, save=save, progress=update)
    if as_json:
        print_json(report.as_dict())
        return
    if markdown:
        sys.stdout.write(report.markdown() + "\n")
        return
    split = report.split.as_dict()
    console.print(
        f"split (seed {seed}): train {split['train_sessions']} sessions / "
        f"{split['train_tasks']} tasks, test {split['test_sessions']} sessions / "
        f"{split['test_tasks']} tasks; 95% bootstrap intervals over test tasks",
        highlight=False,
    )
    print_rows(report.table(), OFFLINE_COLUMNS, output_mode(False), title="offline replay")
    if report.experiment_id:
        console.print(f"saved as experiment {report.experiment_id}", highlight=False)


def _print_ab(summary: Mapping[str, Any], ident: str, status: str) -> None:
    from warmstart.evaluate.ab import summary_table

    arms = summary.get("arms", {})
    console.print(
        f"experiment {ident} ({status}): {summary.get('done', 0)}/{summary.get('planned', 0)} runs",
        highlight=False,
    )
    for arm in ("cold", "warm"):
        info = arms.get(arm, {})
        excluded = info.get("excluded", 0)
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(info.get("excluded_by", {}).items()))
        line = f"  {arm}: {info.get('measured', 0)} measured"
        if excluded:
            line += f", {excluded} excluded ({reasons})"
        console.print(line, highlight=False)
    print_rows(
        summary_table(summary),
        AB_COLUMNS,
        output_mode(False),
        title="warm vs cold (95% intervals over tasks; paired sign-flip test)",
    )


@eval_app.command("ab")
def ab(
    endpoint: Annotated[
        str | None, typer.Option(help="OpenAI-compatible base URL, e.g. http://localhost:8000/v1.")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model name (or $WARMSTART_MODEL).")] = None,
    tasks: Annotated[
        str | None, typer.Option(help="Tasks: a JSONL file (workspace) or a BFCL category spec.")
    ] = None,
    template: Annotated[str | None, typer.Option(help="Template giving the warm arm.")] = None,
    trials: Annotated[int | None, typer.Option(help="Trials per task and arm.")] = None,
    env: Annotated[
        str | None, typer.Option("--env", help="Tool environment: workspace or bfcl.")
    ] = None,
    budget: Annotated[
        int | None, typer.Option(help="Warm history tokens (default: the template's).")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of run order and sampling.")] = None,
    max_turns: Annotated[int | None, typer.Option(help="Turn limit per user turn.")] = None,
    price_in: Annotated[float, typer.Option(help="USD per 1M prompt tokens.")] = 0.0,
    price_out: Annotated[float, typer.Option(help="USD per 1M completion tokens.")] = 0.0,
    api_key: Annotated[
        str | None,
        typer.Option(
            envvar="WARMSTART_API_KEY", help="API key (never stored).", show_default=False
        ),
    ] = None,
    context_length: Annotated[
        int | None, typer.Option(help="Model context window (skips the probe).")
    ] = None,
    tool_timeout: Annotated[
        float, typer.Option(help="Seconds before a tool call is abandoned.")
    ] = 30.0,
    temperature: Annotated[float | None, typer.Option(help="Sampling temperature.")] = None,
    name: Annotated[str, typer.Option(help="A label for the experiment.")] = "",
    resume: Annotated[
        str | None, typer.Option(help="Continue this experiment, skipping finished runs.")
    ] = None,
    max_runs: Annotated[
        int | None, typer.Option(help="Stop after this many new runs (resume later).")
    ] = None,
    retry_errors: Annotated[
        bool, typer.Option(help="With --resume: run excluded runs (endpoint errors) again.")
    ] = False,
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Run tasks cold and warm on a model and compare the arms."""
    from dataclasses import asdict

    from warmstart.evaluate.ab import ABConfig, EvalStore, run_experiment

    given = {
        "endpoint": endpoint,
        "model": model or (os.environ.get("WARMSTART_MODEL") if not resume else None),
        "tasks": tasks,
        "template": template,
        "trials": trials,
        "environment": env,
        "budget": budget,
        "seed": seed,
        "max_turns": max_turns,
        "context_length": context_length,
        "temperature": temperature,
    }
    if resume:
        stored = EvalStore(db).experiment(resume)["config"]
        merged = {**stored, **{k: v for k, v in given.items() if v is not None}}
    else:
        missing = [
            f"--{k.replace('_', '-')}" for k in ("model", "tasks", "template") if not given[k]
        ]
        if missing:
            raise typer.BadParameter(f"missing {', '.join(missing)} (or give --resume ID)")
        merged = {k: v for k, v in given.items() if v is not None}
        merged.setdefault("environment", _guess_env(str(merged["tasks"])))
        merged["name"] = name
    merged.update(price_in=price_in, price_out=price_out, tool_timeout=tool_timeout)
    config = ABConfig.from_dict(merged)
    with _progress("running cold and warm") as update:
        experiment = run_experiment(
            config,
            db=db,
            api_key=api_key,
            resume=resume,
            max_runs=max_runs,
            retry_errors=retry_errors,
            progress=update,
        )
    if as_json:
        print_json(
            {
                "id": experiment.id,
                "status": experiment.status,
                "ran_now": experiment.ran_now,
                "config": asdict(experiment.config),
                "summary": experiment.summary,
            }
        )
        return
    _print_ab(experiment.summary, experiment.id, experiment.status)
    if not experiment.complete:
        console.print(
            f"partial: continue with `warmstart eval ab --resume {experiment.id}`",
            highlight=False,
        )


def _guess_env(tasks: str) -> str:
    """``workspace`` for a task file, ``bfcl`` for a BFCL category spec."""
    return "bfcl" if tasks.startswith(("multi_turn", "bfcl:")) else "workspace"


@eval_app.command("show")
def show(
    experiment_id: Annotated[str, typer.Argument(help="Experiment id (or a unique prefix).")],
    runs: Annotated[bool, typer.Option("--runs", help="List the A/B runs too.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print a Markdown table.")] = False,
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Show a stored experiment's results."""
    from warmstart.evaluate.ab import load_experiment, summary_table
    from warmstart.evaluate.offline import markdown_table, score_table
    from warmstart.evaluate.store import EvalStore

    store = EvalStore(db)
    stored = store.experiment(experiment_id)
    ident = stored["id"]
    if stored["kind"] == "offline":
        scores = store.scores(ident)
        if as_json:
            print_json({**stored, "scores": scores})
        elif markdown:
            sys.stdout.write(markdown_table(score_table(scores)) + "\n")
        else:
            split = (stored["config"] or {}).get("split", {})
            console.print(
                f"offline experiment {ident} ({fmt_time(stored['created_at'])}): test "
                f"{split.get('test_sessions', '?')} sessions / {split.get('test_tasks', '?')} "
                "tasks",
                highlight=False,
            )
            print_rows(score_table(scores), OFFLINE_COLUMNS, output_mode(False))
        return
    experiment = load_experiment(ident, db)
    if as_json:
        print_json({**stored, "summary": experiment.summary, "runs": experiment.runs})
        return
    if markdown:
        sys.stdout.write(markdown_table(summary_table(experiment.summary)) + "\n")
        return
    _print_ab(experiment.summary, ident, experiment.status)
    if runs:
        print_rows(
            experiment.runs,
            [
                "position",
                "task_id",
                "trial",
                "arm",
                "status",
                "stop_reason",
                "calls",
                "total_errors",
                "first_success_turn",
                "success",
            ],
            output_mode(False),
        )


@eval_app.command("list")
def list_(
    kind: Annotated[str | None, typer.Option(help="Only offline or ab experiments.")] = None,
    db: DbOption = None,
    as_json: JsonFlag = False,
    nl: NlFlag = False,
    as_csv: CsvFlag = False,
) -> None:
    """List stored experiments, newest first."""
    from warmstart.evaluate.store import EvalStore

    rows = []
    for e in EvalStore(db).list_experiments(kind):
        config = e["config"] or {}
        if e["kind"] == "ab":
            what = (
                f"{config.get('model')} on {config.get('environment')} "
                f"({config.get('tasks')}), template {config.get('template')}"
            )
        else:
            inner = config.get("config", {})
            what = f"source {inner.get('source') or 'all'}, budgets " + ",".join(
                str(b) for b in inner.get("budgets", [])
            )
        rows.append(
            {
                "id": e["id"],
                "kind": e["kind"],
                "status": e["status"],
                "name": e["name"],
                "created": fmt_time(e["created_at"]),
                "runs": e["runs"],
                "what": what,
            }
        )
    print_rows(
        rows,
        ["id", "kind", "status", "name", "created", "runs", "what"],
        output_mode(as_json, nl, as_csv),
    )
