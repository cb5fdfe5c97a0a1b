"""How long a point logged by the client takes to show on an open run page (the live poll).

A scratch database, a real gunicorn, headless Chromium logged in as a member with the run page open;
the real client logs one step at a time, and for each the bench times (a) logged → stored (the
client's sender) and (b) stored → drawn on the page (`data-last-step` of the reward chart). The
page polls every POLL_ACTIVE seconds while a run is active, so (b) is expected below that plus a
fetch. This used to be a wall-clock assert in tests/explorer/test_live.py. Last line: one JSON object.

    python bench/live_page.py [--steps 20]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, api_key, scratch_database, web_server  # noqa: E402

USER, PASSWORD = "bench-viewer", "bench-viewer-pass-123"
MEMBER = (
    "from django.contrib.auth.models import User\n"
    "from deeprepo_web.accounts.models import Membership, Project, Role\n"
    f"u = User.objects.create_user({USER!r}, password={PASSWORD!r})\n"
    "Membership.objects.create(user=u, project=Project.objects.get(slug='bench'), role=Role.VIEWER)\n"
)


def stored_step(db: str, run_id: str) -> int:
    with psycopg.connect(db) as conn:
        row = conn.execute("SELECT s.last_step FROM runs_metricseries s JOIN runs_run r ON r.id = s.run_id "
                           "WHERE r.public_id = %s AND s.key = 'reward'", [run_id]).fetchone()
    return -1 if row is None or row[0] is None else int(row[0])


def wait_until(check: object, deadline_s: float = 30.0) -> float:
    start = time.monotonic()
    while not check():  # type: ignore[operator]
        if time.monotonic() - start > deadline_s:
            raise TimeoutError("gave up waiting")
        time.sleep(0.01)
    return time.monotonic()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    import deeprepo_client

    db = scratch_database("bench_live_page")
    key = api_key(db, "bench")
    subprocess.run([sys.executable, "manage.py", "shell", "-c", MEMBER], cwd=ROOT, check=True,
                   env={**os.environ, "DATABASE_URL": db})
    spool = tempfile.mkdtemp(prefix="bench-live-")
    sent, shown = [], []
    with web_server(db) as site, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                     args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        page.goto(f"{site}/login/")
        page.fill("input[name=username]", USER)
        page.fill("input[name=password]", PASSWORD)
        page.click("button.primary")
        page.wait_for_url(f"{site}/")
        run = deeprepo_client.init(project="bench", name="live", url=site, api_key=key, spool_dir=spool,
                                   flush_interval=0.1)
        for step in range(3):
            run.log({"reward": step / 10}, step=step)
        wait_until(lambda: stored_step(db, run.id) >= 2)
        page.goto(f"{site}/p/bench/runs/{run.id}/")
        page.wait_for_selector('.panel[data-key="reward"][data-last-step="2"]')
        for step in range(3, 3 + args.steps):
            logged = time.monotonic()
            run.log({"reward": step / 100}, step=step)
            stored = wait_until(lambda s=step: stored_step(db, run.id) >= s)
            page.wait_for_function(
                f'() => +(document.querySelector(\'.panel[data-key="reward"]\').dataset.lastStep) >= {step}',
                timeout=30_000)
            sent.append(stored - logged)
            shown.append(time.monotonic() - stored)
        run.finish()
        browser.close()
    shutil.rmtree(spool, ignore_errors=True)
    q = statistics.quantiles
    print(json.dumps({
        "steps": args.steps,
        "logged_to_stored_p50_s": round(statistics.median(sent), 3),
        "stored_to_shown_p50_s": round(statistics.median(shown), 3),
        "stored_to_shown_p95_s": round(q(shown, n=20)[-1], 3) if len(shown) > 1 else round(shown[0], 3),
        "stored_to_shown_max_s": round(max(shown), 3),
    }))


if __name__ == "__main__":
    main()
