"""A page in a real browser: Debian's Chromium, headless, with every host name resolving to
nothing (a page that fetched anything would log a load error). make browser installs it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.harness.controlplane import REPO_ROOT

SCREENSHOTS = REPO_ROOT / "build" / "screenshots"


def chromium() -> str:
    found = (
        os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )
    assert found, "no chromium: run make browser (Debian's chromium package)"
    return found


def _run(page: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            chromium(),
            "--headless=new",
            "--no-sandbox",  # as root in CI
            "--disable-gpu",
            "--no-first-run",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--enable-logging=stderr",
            "--v=0",
            f"--user-data-dir={page.parent / '.chromium-profile'}",
            *flags,
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def open_page(page: Path, screenshot: str, height: int = 1400) -> tuple[str, Path, str]:
    """The DOM Chromium built from the page, a screenshot of it (in build/screenshots, kept for
    people to look at), and what Chromium logged."""
    dom = _run(page, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    picture = SCREENSHOTS / screenshot
    picture.unlink(missing_ok=True)
    shot = _run(page, f"--screenshot={picture}", f"--window-size=1400,{height}")
    assert shot.returncode == 0 and picture.exists(), shot.stderr[-2000:]
    return dom.stdout, picture, dom.stderr + shot.stderr


def page_errors(log: str) -> list[str]:
    """Chromium's lines about the page: console messages, failed loads, blocked requests."""
    markers = ("CONSOLE", "Failed to load resource", "net::ERR", "Uncaught", "Refused to")
    return [line for line in log.splitlines() if any(m in line for m in markers)]
