"""`warmstart proxy`: an OpenAI-compatible proxy that warm-starts new conversations."""

from __future__ import annotations

import re
from typing import Annotated

import typer

from warmstart.cli.app import app
from warmstart.cli.options import DbOption
from warmstart.errors import ConfigError

_SIZE_RE = re.compile(r"^\s*(\d+)\s*([kmg]?i?b?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_size(value: str) -> int:
    """``32MB``, ``512k``, ``1048576`` -> bytes (powers of 1024)."""
    match = _SIZE_RE.match(value)
    if not match:
        raise ConfigError(f"--max-body: {value!r} is not a size like 32MB or 512k")
    unit = (match.group(2) or "").lower()[:1]
    return int(match.group(1)) * _UNITS[unit]


@app.command()
def proxy(
    upstream: Annotated[
        str,
        typer.Option(
            envvar="WARMSTART_PROXY_UPSTREAM",
            help="Base URL of the real OpenAI-compatible API, e.g. https://api.openai.com/v1.",
            show_default=False,
        ),
    ],
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8787,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    template: Annotated[
        str | None, typer.Option(help="Inject this template's warm history.", show_default=False)
    ] = None,
    auto: Annotated[
        bool, typer.Option("--auto", help="Pick the best template for each conversation.")
    ] = False,
    record: Annotated[
        bool, typer.Option("--record", help="Write every conversation to the store.")
    ] = False,
    ab: Annotated[
        float | None,
        typer.Option(
            "--ab",
            min=0.0,
            max=1.0,
            help="A/B test: share of new conversations in the warm arm (0-1).",
            show_default=False,
        ),
    ] = None,
    db: DbOption = None,
    budget: Annotated[
        int | None, typer.Option(min=1, help="Cap on warm-history tokens.", show_default=False)
    ] = None,
    context_length: Annotated[
        int | None,
        typer.Option(
            min=1,
            envvar="WARMSTART_CONTEXT_LENGTH",
            help="The model's context window, if the upstream does not report it.",
            show_default=False,
        ),
    ] = None,
    min_context: Annotated[
        int, typer.Option(min=0, help="Send conversations cold below this window (tokens).")
    ] = 8192,
    max_body: Annotated[
        str, typer.Option(help="Largest request body accepted (e.g. 32MB).")
    ] = "32MB",
    timeout: Annotated[
        float, typer.Option(min=0.001, help="Seconds to wait for the upstream between bytes.")
    ] = 600.0,
    log_level: Annotated[str, typer.Option(help="debug, info, warning")] = "info",
) -> None:
    """Serve an OpenAI-compatible proxy that warm-starts new conversations."""
    from pydantic import ValidationError

    from warmstart.proxy import ProxySettings, serve

    if ab is not None and not (template or auto):
        raise ConfigError("--ab: an A/B test needs --template or --auto")
    try:
        settings = ProxySettings(
            upstream=upstream,
            host=host,
            port=port,
            template=template,
            auto=auto,
            record=record,
            ab=ab,
            db_url=db,
            budget=budget,
            context_length=context_length,
            min_context=min_context,
            max_body_bytes=parse_size(max_body),
            read_timeout=timeout,
        )
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'options'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ConfigError(f"invalid proxy options: {problems}") from None
    serve(settings, log_level=log_level)
