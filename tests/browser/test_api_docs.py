"""/api/docs renders Swagger UI from vendored files under the site's CSP, offline: no console error,
no request leaves the server, and the API's operations are listed."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_api_docs_render_offline_under_the_csp(browser_page, live_server, screenshot_dir):
    page = browser_page()
    outside: list[str] = []
    # Offline: anything not served by the app itself is refused (a CDN would be).
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(live_server.url)
               else (outside.append(route.request.url), route.abort()))
    res = page.goto(f"{live_server.url}/api/docs")
    assert res.status == 200
    assert "script-src 'self'" in res.headers["content-security-policy"]
    page.wait_for_selector(".opblock-summary-path", timeout=15_000)
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/api/v1/runs" in p for p in paths), paths
    assert "deeprepo-web API" in page.inner_text(".information-container")
    page.screenshot(path=f"{screenshot_dir}/api-docs.png")
    assert outside == []
    assert page.watched.errors == []
