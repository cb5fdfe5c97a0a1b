"""Page reads from a real streaming replica through the router; a user's own writes from the primary;
lag shown and bounded; a dead replica falls back; everything through PgBouncer in transaction mode."""

from __future__ import annotations

import json
import os
import re

import psycopg
from django.urls import reverse

from tests.scale.conftest import DB, Pair, Web, _poll, start_web, stop_web

SLUG = "demo"


def _keep_days(session, web: Web) -> tuple[str, str]:
    """(the retention days the settings page shows, where it says reads go)."""
    res = session.get(web.base + reverse("project_settings", args=[SLUG]), timeout=30)
    assert res.status_code == 200, res.text[:500]
    days = re.search(r'name="keep_days"[^>]*value="([^"]*)"', res.text)
    where = re.search(r'data-replica="(\w+)"', res.text)
    assert days and where
    return days.group(1), where.group(1)


def _set_days(session, web: Web, days: str) -> None:
    res = session.post(web.base + reverse("retention_set", args=[SLUG]), data={
        "keep_days": days, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        headers={"Referer": web.base}, timeout=30, allow_redirects=False)
    assert res.status_code in (200, 302), res.text[:500]


def _reader(pair: Pair, web: Web):
    """A user whose last write (the login) is on the replica already: nothing pins them to the primary."""
    session = web.login("reader")
    _poll(pair.caught_up, "replica catching up")
    session.cookies.pop("deeprepo_wrote")
    return session


def _shoot(chromium, web: Web, session, path: str) -> str:
    """The settings page's Database card as the session's user sees it (a screenshot to look at)."""
    context = chromium.new_context()
    context.add_cookies([{"name": "sessionid", "value": session.cookies["sessionid"], "url": web.base}])
    page = context.new_page()
    page.goto(web.base + reverse("project_settings", args=[SLUG]) + "#database")
    text = page.locator("#database").inner_text()
    page.locator("#database").screenshot(path=path)
    context.close()
    return text


def _paused(pair: Pair, paused: bool) -> None:
    pair.sql(pair.replica, f"SELECT pg_wal_replay_{'pause' if paused else 'resume'}()")


def test_reads_come_from_the_replica_and_a_writer_reads_their_own_write(pair: Pair, web: Web):
    writer, reader = web.login("writer"), _reader(pair, web)
    before, where = _keep_days(reader, web)
    assert where == "serving"
    _paused(pair, True)
    try:
        _set_days(writer, web, "77")
        # The writer's next pages come from the primary (their cookie says they just wrote)...
        assert _keep_days(writer, web)[0] == "77"
        # ...another user's from the replica, which has not replayed that write yet.
        assert _keep_days(reader, web) == (before, "serving")
        assert pair.sql(pair.primary, "SELECT keep_days FROM retention_retentionpolicy")[0][0] == 77
    finally:
        _paused(pair, False)
    _poll(lambda: _keep_days(reader, web)[0] == "77", "the replica serving the write once replayed")


def test_lag_past_the_bound_sends_reads_to_the_primary(pair: Pair, chromium, screenshot_dir: str):
    web = start_web(pair, DEEPREPO_REPLICA_MAX_LAG_SECONDS="1", DEEPREPO_REPLICA_CHECK_SECONDS="0",
                    DEEPREPO_READ_YOUR_WRITES_SECONDS="5")
    try:
        writer, reader = web.login("writer"), _reader(pair, web)
        assert _keep_days(reader, web)[1] == "serving"
        _paused(pair, True)
        try:
            _set_days(writer, web, "55")
            # The replica cannot hold 55 (replay is paused): seeing it means the read went to the primary.
            _poll(lambda: _keep_days(reader, web) == ("55", "primary"), "reads leaving a lagging replica")
            page = reader.get(web.base + reverse("project_settings", args=[SLUG]), timeout=30).text
            assert re.search(r"replica lag \d+\.\d s \(\d+ bytes of WAL\): more than 1 s behind", page)
            shown = _shoot(chromium, web, reader, os.path.join(screenshot_dir, "replica-lagging.png"))
            assert "reads go to the primary" in shown
        finally:
            _paused(pair, False)
        _poll(lambda: _keep_days(reader, web)[1] == "serving", "reads back on the replica once caught up")
        shown = _shoot(chromium, web, reader, os.path.join(screenshot_dir, "replica-serving.png"))
        assert "page reads go to the replica" in shown
    finally:
        stop_web(web)


def test_pages_and_an_export_run_through_pgbouncer(pair: Pair, web: Web):
    reader = _reader(pair, web)
    run, rollout = pair.ids["run"], pair.ids["rollout"]
    for url in (reverse("project", args=[SLUG]), reverse("run", args=[SLUG, run]),
                reverse("run_health", args=[SLUG, run]), reverse("rollouts", args=[SLUG, run]),
                reverse("trajectory", args=[SLUG, run, rollout]), reverse("search", args=[SLUG]) + "?q=files"):
        res = reader.get(web.base + url, timeout=60)
        assert res.status_code == 200, (url, res.text[:300])
    assert "Audit the repository" in reader.get(web.base + reverse("trajectory", args=[SLUG, run, rollout])).text
    # The export streams its ids from a server-side cursor inside one transaction, through PgBouncer.
    res = reader.get(web.base + reverse("search_export", args=[SLUG, "jsonl"]), params={"q": "files"}, timeout=120)
    assert res.status_code == 200
    rows = [json.loads(line) for line in res.text.splitlines()]
    assert len(rows) == 30 and {r["run"] for r in rows} == {run}
    with psycopg.connect(host="127.0.0.1", port=pair.bouncer.port, user="postgres", dbname="pgbouncer",
                         autocommit=True) as admin:
        cur = admin.execute("SHOW STATS")
        names = [c.name for c in cur.description or []]
        stats = {row[names.index("database")]: row[names.index("total_xact_count")] for row in cur.fetchall()}
    assert stats[DB] > 30


def test_a_dead_replica_falls_back_to_the_primary(pair: Pair, web: Web):
    reader = _reader(pair, web)
    pair.replica.stop("immediate")
    try:
        _poll(lambda: _keep_days(reader, web)[1] == "primary", "reads leaving a dead replica")
        page = reader.get(web.base + reverse("project", args=[SLUG]), timeout=60)
        assert page.status_code == 200 and "replica-run" in page.text
        assert "replica unreachable" in reader.get(web.base + reverse("project_settings", args=[SLUG])).text
    finally:
        pair.replica.start()
    _poll(lambda: _keep_days(reader, web)[1] == "serving", "reads back on the restarted replica")


def _health_mean(session, web: Web, run: str) -> list[float]:
    """The run page's GRPO health (raw SQL in explorer.health, cached by its state) as the session's user sees it."""
    res = session.get(web.base + reverse("run_health", args=[SLUG, run]), timeout=60)
    assert res.status_code == 200, res.text[:300]
    return res.json()["mean"]


def test_raw_sql_reads_come_from_the_replica_too(pair: Pair, web: Web):
    """Selectors that aggregate in raw SQL (GRPO health, charts, groups) read where the ORM does."""
    run = pair.ids["run"]
    rollouts = f"run_id = (SELECT id FROM runs_run WHERE public_id = '{run}')"
    reader = _reader(pair, web)
    before = _health_mean(reader, web, run)
    assert before and all(m is not None and m < 10 for m in before)
    _paused(pair, True)
    try:
        pair.sql(pair.primary, f"UPDATE runs_rollout SET reward = reward + 10 WHERE {rollouts}")
        # The primary has the new rewards: a writer's read (pinned to it here by a fresh login) shows them.
        assert all(m >= 10 for m in _health_mean(web.login("writer"), web, run))
        # The reader's health ran on the replica, which has not replayed them.
        assert _health_mean(reader, web, run) == before
    finally:
        _paused(pair, False)
    try:
        _poll(lambda: all(m >= 10 for m in _health_mean(reader, web, run)), "the replica replaying the rewards")
    finally:
        pair.sql(pair.primary, f"UPDATE runs_rollout SET reward = reward - 10 WHERE {rollouts}")


def _search_found(session, web: Web, q: str) -> tuple[int, int]:
    """(rollouts the search page lists, rollouts the search API answers) for `q`, as the session's user."""
    page = session.get(web.base + reverse("search", args=[SLUG]), params={"q": q}, timeout=60)
    assert page.status_code == 200, page.text[:300]
    api = session.get(f"{web.base}/api/v1/projects/{SLUG}/search", params={"q": q}, timeout=60)
    assert api.status_code == 200, api.text[:300]
    return page.text.count('<li class="search-result card">'), len(api.json()["results"])


def test_search_reads_from_the_replica_and_falls_back_to_the_primary(pair: Pair, web: Web):
    # The rollout's document says "okapi" on both servers; then, with replay paused, only on the replica.
    doc = f"src = 'rollout' AND obj = {pair.ids['rollout']} AND part = 0"
    pair.sql(pair.primary, f"UPDATE search_doc SET body = body || ' okapi' WHERE {doc}")
    reader = _reader(pair, web)
    assert _search_found(reader, web, "okapi") == (1, 1)
    _paused(pair, True)
    try:
        pair.sql(pair.primary, f"UPDATE search_doc SET body = replace(body, ' okapi', '') WHERE {doc}")
        # A writer's reads stay on the primary, which no longer has it: the observable is honest.
        assert _search_found(web.login("writer"), web, "okapi") == (0, 0)
        # The reader's search SQL (the page's and the API's) ran on the replica.
        assert _search_found(reader, web, "okapi") == (1, 1)
        pair.replica.stop("immediate")
        try:
            _poll(lambda: _search_found(reader, web, "okapi") == (0, 0), "search leaving a dead replica")
        finally:
            pair.replica.start()  # replay is no longer paused after a restart
    finally:
        _paused(pair, False)
    _poll(lambda: _keep_days(reader, web)[1] == "serving", "reads back on the restarted replica")
    _poll(lambda: _search_found(reader, web, "okapi") == (0, 0), "the replica replaying the change")


def test_a_replica_dying_between_probes_costs_no_page(pair: Pair):
    doc = f"src = 'rollout' AND obj = {pair.ids['rollout']} AND part = 0"
    pair.sql(pair.primary, f"UPDATE search_doc SET body = body || ' quokka' WHERE {doc}")
    # Probed once an hour, so the one worker still believes in the replica after it is gone.
    web = start_web(pair, workers=1, DEEPREPO_REPLICA_MAX_LAG_SECONDS="600", DEEPREPO_REPLICA_CHECK_SECONDS="3600",
                    DEEPREPO_READ_YOUR_WRITES_SECONDS="4200")
    try:
        reader = _reader(pair, web)
        assert _keep_days(reader, web)[1] == "serving"
        pair.replica.stop("immediate")
        try:
            page = reader.get(web.base + reverse("project", args=[SLUG]), timeout=60)
            assert page.status_code == 200 and "replica-run" in page.text
            assert _search_found(reader, web, "quokka") == (1, 1)
            assert _keep_days(reader, web)[1] == "primary"
        finally:
            pair.replica.start()
    finally:
        stop_web(web)
        pair.sql(pair.primary, f"UPDATE search_doc SET body = replace(body, ' quokka', '') WHERE {doc}")
