"""Opening input files: plain or gzipped, with clear errors, and a streaming JSON-array reader."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from warmstart.errors import SourceError
from warmstart.sources.base import IngestReport

CHUNK = 1 << 16
MAX_ITEM = 32 << 20


def open_text(path: Path) -> IO[str]:
    """Open ``path`` as UTF-8 text, transparently gunzipping; bad bytes become U+FFFD."""
    try:
        with path.open("rb") as fh:
            magic = fh.read(2)
        if magic == b"\x1f\x8b":
            return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
        return path.open("r", encoding="utf-8", errors="replace")
    except OSError as exc:
        raise SourceError(f"{path}: cannot open: {exc.strerror or exc}") from exc


def head_text(path: Path, size: int = 65536) -> str:
    """The first ``size`` characters of a file (gunzipped), or '' when unreadable."""
    try:
        with open_text(path) as fh:
            return fh.read(size)
    except (SourceError, OSError, EOFError, gzip.BadGzipFile):
        return ""


def iter_json_array(fh: IO[str], report: IngestReport, where: str) -> Iterator[Any]:
    """Stream the items of a top-level JSON array, holding one item in memory at a time.

    A truncated or malformed array yields every item before the damage and counts
    the rest as skipped.
    """
    decoder = json.JSONDecoder()
    buf = ""
    pos = 0
    eof = False

    def fill() -> bool:
        nonlocal buf, pos, eof
        if eof:
            return False
        try:
            chunk = fh.read(CHUNK)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            report.skip(f"input ends early ({exc})", where)
            eof = True
            return False
        if not chunk:
            eof = True
            return False
        buf = buf[pos:] + chunk
        pos = 0
        return True

    def skip_ws() -> bool:
        nonlocal pos
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n":
                pos += 1
            if pos < len(buf):
                return True
            if not fill():
                return False

    if not skip_ws() or buf[pos] != "[":
        raise SourceError(f"{where}: not a JSON array")
    pos += 1
    index = 0
    while True:
        if not skip_ws():
            report.skip("JSON array is truncated", f"{where} after item {index}")
            return
        if buf[pos] == "]":
            return
        if buf[pos] == ",":
            pos += 1
            continue
        while True:
            try:
                item, end = decoder.raw_decode(buf, pos)
                break
            except json.JSONDecodeError as exc:
                if len(buf) - pos <= MAX_ITEM and fill():
                    continue
                if len(buf) - pos > MAX_ITEM:
                    report.skip("item over 32 MB or malformed JSON", f"{where} item {index}")
                    return
                ends_early = "Unterminated" in exc.msg or exc.pos >= len(buf.rstrip()) - 1
                reason = "JSON array is truncated" if ends_early else "malformed JSON"
                report.skip(reason, f"{where} item {index}")
                return
        pos = end
        yield item
        index += 1
