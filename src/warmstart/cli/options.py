"""Options and renderers shared by every command group (one place, like sqlite-utils)."""

from __future__ import annotations

import csv
import io
import json
import re
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.table import Table

from warmstart.cli.app import console

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="WARMSTART_DB",
        help="SQLAlchemy URL of the store (default: sqlite in $WARMSTART_HOME).",
        show_default=False,
    ),
]


class Output(StrEnum):
    """How a listing is printed."""

    table = "table"
    json = "json"
    nl = "nl"
    csv = "csv"


JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
NlFlag = Annotated[bool, typer.Option("--nl", help="Print newline-delimited JSON.")]
CsvFlag = Annotated[bool, typer.Option("--csv", help="Print CSV.")]


def output_mode(as_json: bool, nl: bool = False, as_csv: bool = False) -> Output:
    """The chosen output from the three flags (table when none)."""
    if as_json:
        return Output.json
    if nl:
        return Output.nl
    if as_csv:
        return Output.csv
    return Output.table


def print_json(data: Any) -> None:
    """JSON on stdout, unstyled so pipes get exactly what they parse."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def print_rows(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[str],
    mode: Output,
    title: str | None = None,
) -> None:
    """Render rows as a rich table, JSON, NL-JSON or CSV."""
    if mode is Output.json:
        print_json(list(rows))
        return
    if mode is Output.nl:
        for row in rows:
            sys.stdout.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        return
    if mode is Output.csv:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow(row)
        sys.stdout.write(buf.getvalue())
        return
    table = Table(title=title, show_lines=False, header_style="bold")
    for col in columns:
        table.add_column(col)
    for row in rows:
        table.add_row(*(fmt_cell(row.get(col)) for col in columns))
    console.print(table)


def fmt_cell(value: Any) -> str:
    """A table cell: short, readable, never a crash on odd types."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    text = str(value)
    return text if len(text) <= 80 else text[:79] + "…"


def fmt_time(ts: float | None) -> str:
    """Epoch seconds as a UTC date-time, or '-'."""
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M")


_REL = re.compile(r"^(\d+)([smhdw])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(value: str | None) -> float | None:
    """``--since``: an ISO date/time (UTC) or a relative age like ``7d`` or ``12h``."""
    if not value:
        return None
    match = _REL.match(value.strip())
    if match:
        return time.time() - int(match.group(1)) * _UNITS[match.group(2)]
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError as exc:
        raise typer.BadParameter(
            f"{value!r} is neither an ISO date (2026-11-01) nor an age (7d, 12h)",
            param_hint="--since",
        ) from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def split_tags(value: str | None) -> list[str]:
    """``a,b , c`` -> ``['a', 'b', 'c']``."""
    return [t.strip() for t in (value or "").split(",") if t.strip()]
