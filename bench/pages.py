"""Server time of the explorer's pages as the data grows: 10k / 100k / 1M rollouts.

For each size: a scratch database seeded by `manage.py seed_scale` (COPY), a real gunicorn on
127.0.0.1, a logged-in session, then ~20 sequential requests per page after a warm-up; p50 / p95
of the wall time of each request over loopback. Pages: runs explorer (default, text filter,
sorted by a metric, grouped by config), run page, its live poll, GRPO health JSON, series endpoint on a
1,000,000-point series at 1,000 buckets, and the rollouts list / trajectory when those pages exist;
a 20-panel report, published (its frozen data read back) and as a live draft: warm (its panels' runs did
not move: read from the cache) and cold (every run just touched: the page computes nothing it does not
hold and leaves those panels "computing"; each then asks for itself, as a browser does — their times
are reported beside the page's, sequential sum and slowest).
Targets: p95 <= 200 ms for every page at 1M rollouts; series <= 50 ms; a 20-panel report <= 500 ms.
Last line: one JSON object with the numbers.

    python bench/pages.py [--sizes 10000,100000,1000000] [--requests 20] [--reuse] [--db-prefix P] [--only report,run_page]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import ROOT, db_url, p95, scratch_database, web_server  # noqa: E402

SLUG = "scale"
PASSWORD = "scale-pass-123"
TARGET_PAGE_MS = 200.0
TARGET_SERIES_MS = 50.0
TARGET_REPORT_MS = 500.0

# Made once per bench database through the services (`manage.py shell`): 20 panels over six runs of
# about 1,000 rollouts each, then published. It needs 4 eval runs and 2 training runs; seed_scale makes
# one eval run in 7 and at least 20 runs (one per 1,000 rollouts), so below 28,000 rollouts there are too
# few eval runs: no report is made then and the script says so ("REPORT-SKIP <evals> <trains>").
REPORT_EVALS, REPORT_TRAINS = 4, 2
REPORT_SEED = """
from deeprepo_web.accounts.models import Project
from deeprepo_web.reports.models import Report
from deeprepo_web.reports.services import report_create, report_publish
from deeprepo_web.runs.models import Run
p = Project.objects.get(slug="%(slug)s")
r = Report.objects.filter(project=p, title="bench: 20 panels").first()
if r is not None and r.blocks.exclude(kind="text").count() != 20:
    r.delete()
    r = None
ev = list(Run.objects.filter(project=p, kind="eval").order_by("id").values_list("public_id", flat=True)[:4])
tr = list(Run.objects.filter(project=p, kind="train").exclude(name="long-series").order_by("id")
          .values_list("public_id", flat=True)[:2])
if r is None and len(ev) == 4 and len(tr) == 2:
    ro = Run.objects.get(public_id=tr[0]).rollouts.order_by("id").values_list("id", flat=True).first()
    blocks = [{"kind": "text", "text": "## Results"}]
    blocks += [{"kind": k, "params": {"runs": ev[:3]}} for k in ("compare", "per_example", "label_rates")]
    blocks += [{"kind": k, "params": {"run": e}} for e in ev for k in ("raw_summary", "eval_summary")]
    blocks += [{"kind": "curves", "params": {"runs": tr, "keys": ["reward"]}} for _ in range(3)]
    blocks += [{"kind": "grpo_health", "params": {"run": t}} for t in tr]
    blocks += [{"kind": "checkpoints", "params": {"run": tr[0]}}]
    blocks += [{"kind": "excerpt", "params": {"run": tr[0], "rollout": ro, "turns": "1-6"}} for _ in range(3)]
    r = report_create(project=p, user=p.memberships.first().user, title="bench: 20 panels", blocks=blocks)
    report_publish(report=r, user=p.memberships.first().user)
if r is None:
    print("REPORT-SKIP", len(ev), len(tr))
else:
    print("REPORT", r.public_id, r.blocks.exclude(kind="text").count())
"""


def report_case(url: str) -> tuple[str | None, str]:
    """The 20-panel report's public id, or None and why there is none (too few runs at this size)."""
    env = {**os.environ, "DATABASE_URL": url}
    out = subprocess.run([sys.executable, "manage.py", "shell", "-c", REPORT_SEED % {"slug": SLUG}], cwd=ROOT,
                         env=env, check=True, capture_output=True, text=True).stdout
    skipped = re.search(r"REPORT-SKIP (\d+) (\d+)", out)
    if skipped:
        return None, (f"no 20-panel report: it needs {REPORT_EVALS} eval and {REPORT_TRAINS} training runs, this "
                      f"database has {skipped.group(1)} and {skipped.group(2)} (seed_scale makes 4 eval runs from "
                      "28,000 rollouts on); the report pages are not timed at this size")
    found = re.search(r"REPORT (\w+) (\d+)", out)
    assert found and int(found.group(2)) == 20, out[-500:]
    return found.group(1), ""


PENDING = re.compile(r'hx-get="([^"]+/panel/)" hx-trigger="load"')


def panels_load(client: httpx.Client, html: str) -> list[float]:
    """Each panel a report page's `html` left "computing", read as a browser's htmx does: each one's
    time in ms."""
    times = []
    for url in PENDING.findall(html):
        start = time.perf_counter()
        res = client.get(url)
        times.append((time.perf_counter() - start) * 1000)
        assert res.status_code == 200, f"{url}: HTTP {res.status_code}"
    return times


def load_pending(client: httpx.Client, path: str) -> tuple[int, list[float]]:
    """The draft's page, then each panel it left "computing": how many, and each one's time in ms."""
    times = panels_load(client, client.get(path).text)
    return len(times), times


def report_runs(url: str, report: str) -> list[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT b.params FROM reports_block b JOIN reports_report r ON r.id = b.report_id "
                            "WHERE r.public_id = %s", [report]).fetchall()
    ids: set[str] = set()
    for (params,) in rows:
        ids.update(params.get("runs") or [])
        ids.update([params["run"]] if params.get("run") else [])
    return sorted(ids)


def draft_cold(client: httpx.Client, path: str, url: str, report: str, n: int) -> dict[str, Any]:
    """Every run of the report touched (its panels' stamps move), then the page and its panels."""
    runs = report_runs(url, report)
    pages, sums, slowest = [], [], []
    for _ in range(n):
        with psycopg.connect(url) as conn:
            conn.execute("UPDATE runs_run SET updated_at = now() WHERE public_id = ANY(%s)", [runs])
        start = time.perf_counter()
        res = client.get(path)
        pages.append((time.perf_counter() - start) * 1000)
        assert res.status_code == 200
        times = panels_load(client, res.text)
        sums.append(sum(times))
        slowest.append(max(times, default=0.0))
    return {"p50_ms": round(statistics.median(pages), 1), "p95_ms": p95(pages),
            "panels_left_to_load": len(times), "panels_sum_p50_ms": round(statistics.median(sums), 1),
            "slowest_panel_p50_ms": round(statistics.median(slowest), 1), "bytes": len(res.content)}


def seeded_size(url: str) -> int | None:
    try:
        with psycopg.connect(url) as conn:
            row = conn.execute(
                "SELECT count(*) FROM runs_rollout r JOIN runs_run u ON u.id = r.run_id "
                "JOIN accounts_project p ON p.id = u.project_id WHERE p.slug = %s", [SLUG]
            ).fetchone()
            return int(row[0]) if row else None
    except psycopg.Error:
        return None


def seed(size: int, reuse: bool, prefix: str = "bench_pages") -> tuple[str, float | None]:
    name = f"{prefix}_{size}"
    url = db_url(name)
    if reuse and seeded_size(url) == size:
        # Migrations merged since it was seeded apply to it too (new columns, new indexes).
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT,
                       env={**os.environ, "DATABASE_URL": url}, check=True)
        return url, None
    url = scratch_database(name)
    env = {**os.environ, "DATABASE_URL": url}
    start = time.perf_counter()
    subprocess.run([sys.executable, "manage.py", "seed_scale", "--rollouts", str(size), "--project", SLUG],
                   cwd=ROOT, env=env, check=True)
    return url, time.perf_counter() - start


def train_runs(conn: psycopg.Connection[Any]) -> list[tuple[str, int]]:
    """The seeded project's training runs by id, but its one 1M-point series run: (public id, id)."""
    return conn.execute(
        "SELECT r.public_id, r.id FROM runs_run r JOIN accounts_project p ON p.id = r.project_id "
        "WHERE p.slug = %s AND r.kind = 'train' AND r.name <> 'long-series' ORDER BY r.id", [SLUG]
    ).fetchall()


def targets(url: str) -> dict[str, Any]:
    with psycopg.connect(url) as conn:
        # A typical training run: the median by id among the finished ones.
        runs = train_runs(conn)
        public_id, run_pk = runs[len(runs) // 2]
        long_id = conn.execute("SELECT public_id FROM runs_run WHERE name = 'long-series'").fetchone()[0]
        rollout = conn.execute("SELECT id FROM runs_rollout WHERE run_id = %s ORDER BY id LIMIT 1 OFFSET 7",
                               [run_pk]).fetchone()
        config_key = "config.lr"
        mark_label(conn)
    return {"run": public_id, "long": long_id, "rollout": rollout[0] if rollout else None, "group": config_key}


BENCH_LABEL = "bench-gives-up"


def mark_label(conn: psycopg.Connection[Any]) -> None:
    """A label on 5 % of the rollouts of every other run (once): the explorer's labels column and label
    filter then have marks to count and runs to leave out."""
    project_id = conn.execute("SELECT id FROM accounts_project WHERE slug = %s", [SLUG]).fetchone()[0]
    if conn.execute("SELECT 1 FROM labels_label WHERE project_id = %s AND name = %s",
                    [project_id, BENCH_LABEL]).fetchone():
        return
    label_id = conn.execute(
        "INSERT INTO labels_label (project_id, name, colour, description, created_at) "
        "VALUES (%s, %s, '#d9480f', '', now()) RETURNING id", [project_id, BENCH_LABEL]).fetchone()[0]
    conn.execute(
        "INSERT INTO labels_mark (label_id, rollout_id, run_id, turn_index, note, status, source, created_at) "
        "SELECT %s, r.id, r.run_id, NULL, '', 'confirmed', 'bench', now() FROM runs_rollout r "
        "JOIN runs_run u ON u.id = r.run_id WHERE u.project_id = %s AND u.id %% 2 = 0 AND r.id %% 20 = 0",
        [label_id, project_id])
    conn.execute("ANALYZE labels_mark")


def login(client: httpx.Client) -> None:
    page = client.get("/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token, "no CSRF token on the login page"
    res = client.post("/login/", data={"username": f"{SLUG}-owner", "password": PASSWORD,
                                       "csrfmiddlewaretoken": token.group(1), "next": "/"},
                      headers={"Referer": str(client.base_url) + "/login/"})
    assert res.status_code in (200, 302), res.status_code
    assert client.get(f"/p/{SLUG}/").status_code == 200, "login failed"


def measure(client: httpx.Client, path: str, n: int, headers: dict[str, str] | None = None) -> dict[str, Any] | None:
    first = client.get(path, headers=headers)
    if first.status_code == 404:
        return None  # the page does not exist (yet)
    if first.status_code not in (200, 286):
        raise RuntimeError(f"{path}: HTTP {first.status_code}: {first.text[:300]}")
    for _ in range(2):
        client.get(path, headers=headers)
    times = []
    for _ in range(n):
        start = time.perf_counter()
        res = client.get(path, headers=headers)
        times.append((time.perf_counter() - start) * 1000)
        assert res.status_code in (200, 286)
    return {"p50_ms": round(statistics.median(times), 1), "p95_ms": p95(times), "bytes": len(first.content)}


def pages(t: dict[str, Any]) -> dict[str, tuple[str, dict[str, str] | None]]:
    run = f"/p/{SLUG}/runs/{t['run']}/"
    hx = {"HX-Request": "true", "HX-Target": "runs-table"}
    out: dict[str, tuple[str, dict[str, str] | None]] = {
        "explorer": (f"/p/{SLUG}/", None),
        "explorer_filter_q": (f"/p/{SLUG}/?q=qwen3-8b", hx),
        "explorer_sort_metric": (f"/p/{SLUG}/?sort=-metric:reward", hx),
        "explorer_group_config": (f"/p/{SLUG}/?group={t['group']}", hx),  # pages past it: bench/deep_pages.py
        "explorer_label": (f"/p/{SLUG}/?label={BENCH_LABEL}", hx),
        "run_page": (run, None),
        "run_status": (run + "status/", None),
        "grpo_health": (run + "health/", None),
        "run_live": (run + "live/", None),  # what an open run page polls every 2-5 s
        "series_after_all_keys": (f"/api/v1/runs/{t['run']}/series?after=0", None),
        "series_1M_points_after_last_10": (f"/api/v1/runs/{t['long']}/series?key=reward&after=999989", None),
        "series_1M_points_1000_buckets": (f"/api/v1/runs/{t['long']}/series?key=reward&buckets=1000", None),
        "series_run_reward": (f"/api/v1/runs/{t['run']}/series?key=reward&buckets=1000", None),
        "rollouts_list": (run + "rollouts/", None),
    }
    if t["rollout"] is not None:
        out["trajectory"] = (f"{run}rollouts/{t['rollout']}/", None)
    if t.get("report"):
        out["report_20_panels_published"] = (f"/p/{SLUG}/reports/{t['report']}/published/", None)
        out["report_20_panels_live_draft"] = (f"/p/{SLUG}/reports/{t['report']}/", None)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--reuse", action="store_true", help="keep an already seeded bench database of that size")
    parser.add_argument("--db-prefix", default="bench_pages", help="scratch databases are <prefix>_<size>")
    parser.add_argument("--only", default="", help="time only the pages whose names contain one of these "
                                                   "comma-separated words, e.g. report,run_page")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    result: dict[str, Any] = {"requests_per_page": args.requests, "sizes": {}, "seed_seconds": {}}
    for size in sizes:
        url, seconds = seed(size, args.reuse, args.db_prefix)
        if seconds is not None:
            result["seed_seconds"][str(size)] = round(seconds, 1)
        t = targets(url)
        t["report"], why = report_case(url)
        if why:
            result.setdefault("report_skipped", {})[str(size)] = why
            print(f"{size:>8} {why}", flush=True)
        figures: dict[str, Any] = {}
        with web_server(url, workers=1, threads=1) as site, httpx.Client(base_url=site, timeout=60,
                                                                          follow_redirects=False) as client:
            login(client)
            only = [w.strip() for w in args.only.split(",") if w.strip()]
            for name, (path, headers) in pages(t).items():
                if only and not any(w in name for w in only):
                    continue
                if name == "report_20_panels_live_draft":
                    load_pending(client, path)  # computed once, as an open page's panels would be
                m = measure(client, path, args.requests, headers)
                if m is not None and name == "report_20_panels_live_draft":
                    m["panels_left_to_load"] = load_pending(client, path)[0]  # 0: the warm page held all
                if m is not None:
                    figures[name] = m
                    print(f"{size:>8} {name:<32} p50 {m['p50_ms']:7.1f} ms  p95 {m['p95_ms']:7.1f} ms", flush=True)
            if t.get("report") and (not only or any(w in "report_20_panels_live_draft_cold" for w in only)):
                name = "report_20_panels_live_draft_cold"
                m = figures[name] = draft_cold(client, f"/p/{SLUG}/reports/{t['report']}/", url, t["report"],
                                               max(3, args.requests // 4))
                print(f"{size:>8} {name:<32} p50 {m['p50_ms']:7.1f} ms  p95 {m['p95_ms']:7.1f} ms  then "
                      f"{m['panels_left_to_load']} panels: sum {m['panels_sum_p50_ms']:.0f} ms, slowest "
                      f"{m['slowest_panel_p50_ms']:.0f} ms", flush=True)
        result["sizes"][str(size)] = figures
    top = result["sizes"].get(str(max(sizes)), {})
    worst = max((v["p95_ms"] for k, v in top.items() if not k.startswith(("series", "report"))), default=None)
    report = top.get("report_20_panels_published", {}).get("p95_ms")
    result["report_published_p95_ms"] = report
    draft = result["report_draft_p95_ms"] = top.get("report_20_panels_live_draft", {}).get("p95_ms")
    cold = result["report_draft_cold_p95_ms"] = top.get("report_20_panels_live_draft_cold", {}).get("p95_ms")
    # None when the largest size had no report to time (too few runs), not a missed target.
    result["report_target_met"] = None if str(max(sizes)) in result.get("report_skipped", {}) else all(
        v is not None and v <= TARGET_REPORT_MS for v in (report, draft, cold))
    series = top.get("series_1M_points_1000_buckets", {}).get("p95_ms")
    result["largest_size"] = max(sizes)
    result["worst_page_p95_ms"] = worst
    result["series_1M_p95_ms"] = series
    result["pages_target_met"] = worst is not None and worst <= TARGET_PAGE_MS
    result["series_target_met"] = series is not None and series <= TARGET_SERIES_MS
    print(json.dumps(result))


if __name__ == "__main__":
    main()
