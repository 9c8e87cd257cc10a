"""Chromium for the browser tests, through Playwright: Debian's ``chromium`` (or the one named
by ``TIERED_MEMORY_CHROMIUM``) driven by pip's ``playwright`` via ``executable_path``, since
Playwright's own browser download is not reachable everywhere.

Where no Chromium or no Playwright can be found, :func:`chromium` skips the test with the
reason, and ``conftest.py`` prints a banner at the end of the run (``.ci/run`` installs
Chromium when it can).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

#: Why the browser tests could not run here (empty: they could, or none was asked for).
UNAVAILABLE: list[str] = []
_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def executable() -> str | None:
    """The Chromium to drive, or ``None``."""
    named = os.environ.get("TIERED_MEMORY_CHROMIUM")
    if named:
        return named if os.path.exists(named) else shutil.which(named)
    return next((found for name in _NAMES if (found := shutil.which(name))), None)


def _unavailable(reason: str) -> None:
    if not UNAVAILABLE:
        UNAVAILABLE.append(reason)
    pytest.skip(f"browser tests skipped: {reason}")


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A launched headless Chromium (a Playwright ``Browser``), closed on exit."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[test]')")
    path = executable()
    if path is None:
        _unavailable("no Chromium found (apt-get install chromium, or set TIERED_MEMORY_CHROMIUM)")
    # As root (a container, CI), Chromium's sandbox cannot start.
    args = ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=args)
        try:
            yield browser
        finally:
            browser.close()
