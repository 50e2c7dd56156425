"""A real headless Debian Chromium for the browser tests, driven by Playwright.

Never a downloaded browser: Playwright launches ``/usr/bin/chromium`` (``.ci/run``
installs Debian's package when it is missing). Without it the tests skip and print why.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium per test module."""
    if not os.path.exists(CHROMIUM):
        reason = f"{CHROMIUM} is missing: install Debian's chromium to run the browser tests"
        print(reason)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()
