"""Headless Chromium (Debian's) driven by Playwright against Django's live server.

Use `browser_page(user)` to get a logged-in page; every page records console errors, CSP
violations and uncaught exceptions so tests can assert that no script ran that should not.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        pytest.skip("Chromium is not installed (apt-get install chromium; .ci/run does it)")
    # Playwright's sync API keeps an event loop on this thread; the ORM calls in tests are still sync.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


class Watched:
    def __init__(self, page: Any) -> None:
        self.page = page
        self.errors: list[str] = []
        page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        page.on("console", self._console)

    def _console(self, msg: Any) -> None:
        if msg.type == "error":
            self.errors.append(f"console: {msg.text}")


@pytest.fixture
def browser_page(chromium: Any, live_server: Any) -> Iterator[Callable[..., Any]]:
    contexts: list[Any] = []

    def open_as(user: Any | None = None, password: str | None = None) -> Any:
        context = chromium.new_context(viewport={"width": 1400, "height": 900})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        watched = Watched(page)
        page.watched = watched  # type: ignore[attr-defined]
        if user is not None:
            page.goto(f"{live_server.url}/login/")
            page.fill("input[name=username]", user.username)
            page.fill("input[name=password]", password or f"{user.username}-pass-123")
            page.click("button.primary")
            page.wait_for_url(f"{live_server.url}/")
        return page

    yield open_as
    for context in contexts:
        context.close()


@pytest.fixture
def screenshot_dir() -> str:
    path = os.environ.get("DEEPREPO_SCREENSHOTS", "/tmp/deeprepo-screenshots")
    os.makedirs(path, exist_ok=True)
    return path
