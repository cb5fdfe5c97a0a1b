"""Hostile content in every field a model or a user can fill, then every page that shows it, in Chromium.

The corpus: script tags, event-handler attributes, attribute breakouts, `javascript:` links in raw
HTML and in Markdown, iframe srcdoc, template syntax, ANSI/OSC escapes, bidi overrides, zero-width
characters, a 200 KB line without spaces, invalid UTF-8 (stored as U+FFFD) and NUL. Every payload
that would run sets `window.__pwned`; every URL it names is on `evil.invalid`.

For each page we check: no script ran (before and after opening every <details> and clicking the
"show all / more" controls), no CSP violation (an init script records `securitypolicyviolation`
events: an inline handler that reaches the DOM unescaped is blocked by CSP and shows up here even
though it did not run), no console error, no request left the live server, and the layout holds
(no horizontal scroll wider than the viewport).
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import urlparse

import pytest

from deeprepo_web.accounts.services import api_key_create
from deeprepo_web.artifacts.services import artifact_store_file
from deeprepo_web.importers.models import ImportJob
from deeprepo_web.jobs.services.clusters import cluster_save
from deeprepo_web.jobs.services.launch import job_launch
from deeprepo_web.jobs.services.templates import template_save
from deeprepo_web.runs.models import Example, Rollout, Run
from deeprepo_web.sharing.services import share_create

pytestmark = pytest.mark.django_db(transaction=True)

EVIL = "http://evil.invalid"
SCRIPT = "<script>window.__pwned=1</script>"
PAYLOADS = [
    SCRIPT,
    '<img src=x onerror="window.__pwned=1">',
    f'"><svg onload=window.__pwned=1><img src="{EVIL}/a.png">',
    "'><body onload=window.__pwned=1>",
    f'<a href="javascript:window.__pwned=1">click</a> [x](javascript:window.__pwned=1) [y]({EVIL}/md)',
    f"![img]({EVIL}/img.png) <iframe srcdoc=\"<script>parent.__pwned=1</script>\"></iframe>",
    "{{ 7*7 }} {% now 'Y' %} ${7*7}",
    "\x1b[31mred\x1b[0m \x1b]8;;http://evil.invalid/osc\x07osc link\x1b]8;;\x07 \x1b]0;title\x07",
    "abc\u202etxt.exe zero\u200bwidth\u200d\ufeff",
    "bad utf8 \ufffd\ufffd and NUL \x00 end",
    '<style>body{display:none}</style><link rel=stylesheet href="http://evil.invalid/x.css">',
    "=HYPERLINK(\"http://evil.invalid\",\"x\")",
]
SHORT = " ".join(PAYLOADS)  # ~650 characters
LONG = "A" * 200_000  # one 200 KB line without a space
BIG = SHORT + "\n" + LONG + "\n" + SHORT


def short(limit: int) -> str:
    """The corpus cut to a field's limit, always starting with the script tag."""
    return SHORT[:limit]


def typed(limit: int) -> str:
    """What a person can type into a form: Django's form fields refuse NUL, so it never gets this far."""
    return SHORT.replace("\x00", "")[:limit]


PATCH = (
    "diff --git a/db.py b/db.py\n--- a/db.py\n+++ b/db.py\n@@ -1,2 +1,2 @@\n"
    f"-{SCRIPT}\n+{PAYLOADS[1]}\n+{LONG[:5000]}\n {PAYLOADS[7]}\n"
)


def hostile_call(depth: int = 0) -> dict[str, Any]:
    call: dict[str, Any] = {"call_id": f"c{depth}", "name": short(100), "arguments": {short(200): BIG, "x": SHORT},
                            "output": BIG, "model": short(100), "is_error": True}
    if depth == 0:
        call["sub_calls"] = [{"name": short(100), "arguments": {"prompt": BIG}, "output": BIG,
                              "model": short(100)}]
    return call


def hostile_rollout(i: int, **extra: Any) -> dict[str, Any]:
    record = {
        "uid": f"hostile-{i}", "example_key": short(300), "prompt": BIG, "oracle": PATCH,
        "example_info": {short(100): SHORT}, "step": i, "sample_index": i, "reward": 0.25 * i,
        "reward_components": {short(60): 0.5}, "stop_condition": short(100), "error": BIG,
        "final_answer": BIG, "metrics": {short(60): 1.0},
        "turns": [
            {"role": "system", "content": BIG},
            {"role": "user", "content": BIG},
            {"role": "assistant", "content": BIG, "reasoning": BIG, "model": short(100),
             "tool_calls": [hostile_call()]},
            {"role": "tool", "content": BIG},
            {"role": "assistant", "content": f"{SHORT}\n\n```\n{LONG}\n```\n| a | {SCRIPT} |\n|---|---|\n| {LONG[:3000]} | x |"},
        ],
    }
    record.update(extra)
    return record


def build_world(api: Any, team: Any, tmp_path: Any) -> dict[str, Any]:
    def post(path: str, body: Any) -> Any:
        res = api.post(path, body)
        assert res.status_code in (200, 201), f"{path}: {res.status_code} {res.content[:300]!r}"
        return res.json()

    run_body = {"name": short(500), "model": short(500), "environment": short(500), "method": short(100),
                "tags": [short(200), PAYLOADS[1][:200], "\u202etag"], "notes": BIG,
                "config": {short(200): BIG, "lr": 1e-5, "nested": {SCRIPT: [SHORT, LONG]}}}
    run = post("/runs", run_body)["id"]
    other = post("/runs", {**run_body, "name": PAYLOADS[1]})["id"]
    ckpt = post("/runs", {**run_body, "kind": "eval", "parent_run_id": run, "checkpoint_step": 10})["id"]
    keys = [short(120), PAYLOADS[1], PAYLOADS[7][:120], "reward"]
    points = [{"step": s, "values": {k: float(s) for k in keys}} for s in range(0, 30, 3)]
    for r in (run, other, ckpt):
        post(f"/runs/{r}/metrics", points)
        post(f"/runs/{r}/rollouts", [hostile_rollout(i) for i in range(4)]
             + [hostile_rollout(9, final_answer=PATCH, uid="patch")])
    run_obj = Run.objects.get(public_id=run)
    rollout = Rollout.objects.filter(run=run_obj).exclude(uid="patch").order_by("pk").first()
    patch = Rollout.objects.get(run=run_obj, uid="patch")
    assert rollout is not None
    example = Example.objects.get(pk=rollout.example_id)
    sibling = Rollout.objects.filter(example=example).exclude(pk=rollout.pk).order_by("pk").first()
    assert sibling is not None

    # Fields people fill in the UI (their services are what the forms call).
    file = tmp_path / "a.txt"
    file.write_text(BIG)
    artifact_store_file(run=run_obj, name="x" + PAYLOADS[5][:20].replace("/", "_") + SCRIPT.replace("/", "_"),
                        kind="log", path=file)
    share_create(project=team.project, user=team.owner, kind="rollout", target=str(rollout.pk), title=typed(200))
    _, token = share_create(project=team.project, user=team.owner, kind="run", target=run, title=typed(200))
    api_key_create(project=team.project, user=team.owner, name=typed(100))
    template = template_save(
        project=team.project, slug="hostile", name=typed(200), kind="train",
        command_template="echo {{ note }}", description=BIG.replace('\x00', '')[:5000],
        params_schema=[{"name": "note", "type": "str", "label": typed(100), "help": typed(300), "default": SCRIPT}],
    )
    cluster = cluster_save(project=team.project, name=typed(100), kind="local",
                           settings_in={"state_dir": str(tmp_path / "jobs"), "workdir": str(tmp_path)})
    job = job_launch(project=team.project, template=template, cluster=cluster, params={"note": typed(1000) + LONG[:3000]},
                     user=team.owner, name=typed(200))
    upload = ImportJob.objects.create(project=team.project, user=team.owner, source_name=typed(1000),
                                      path="/nope", status="failed", error=typed(2000) + LONG)
    return {"run": run, "other": other, "ckpt": ckpt, "rollout": rollout.pk, "patch": patch.pk,
            "example": example.pk, "sibling": sibling.pk, "token": token, "job": job.public_id, "template": template.slug,
            "cluster": cluster.pk, "import": upload.pk}


INIT = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', function (e) {
  window.__csp.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + (e.sample || ''));
});
"""

EXPAND = """
() => {
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  var n = 0;
  document.querySelectorAll('button, a').forEach(function (el) {
    var t = (el.textContent || '').trim().toLowerCase();
    var href = el.getAttribute('href');
    if (n < 20 && /^(show all|show more|more|expand|load more|show)\\b/.test(t) && (!href || href === '#')) {
      el.click(); n += 1;
    }
  });
  return n;
}
"""


PARTIALS = {"run_status", "import_job"}  # htmx fragments: no stylesheet, so no layout to check


def check_page(page: Any, url: str, origin: str, label: str) -> list[str]:
    partial = label in PARTIALS
    problems: list[str] = []
    outside: list[str] = []

    def on_request(req: Any) -> None:
        u = urlparse(req.url)
        if u.scheme in ("data", "blob", "about"):
            return
        if f"{u.scheme}://{u.netloc}" != origin or "evil" in req.url or u.path in ("/x", "/a.png"):
            outside.append(req.url)

    failed: list[str] = []

    def on_response(resp: Any) -> None:
        if resp.status >= 400:
            failed.append(f"{resp.status} {resp.url}")

    page.on("request", on_request)
    page.on("response", on_response)
    start = len(page.watched.errors)
    res = page.goto(url)
    # 286: htmx's "stop polling" answer of a finished import.
    if res is None or res.status not in (200, 286):
        problems.append(f"{label}: HTTP {res.status if res else '?'}")
        page.remove_listener("request", on_request)
        page.remove_listener("response", on_response)
        return problems
    page.wait_for_load_state("networkidle")
    if page.evaluate("window.__pwned") is not None:
        problems.append(f"{label}: script ran on load")
    page.evaluate(EXPAND)
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(150)
    if page.evaluate("window.__pwned") is not None:
        problems.append(f"{label}: script ran after expanding")
    csp = page.evaluate("window.__csp")
    if csp:
        problems.append(f"{label}: CSP violations {csp[:3]}")
    # A partial opened on its own has no <link rel=icon>: Chromium's /favicon.ico probe is a 404.
    errors = [e for e in page.watched.errors[start:] if not (partial and "404" in e)]
    if errors:
        problems.append(f"{label}: console errors {errors[:3]} {failed[:3]}")
    if outside:
        problems.append(f"{label}: requests left the server {outside[:3]}")
    width = [0, 0] if partial else page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    if width[0] > width[1] + 20:
        wide = page.evaluate("""() => { var out = [];
          document.querySelectorAll('body *').forEach(function (el) {
            var r = el.getBoundingClientRect();
            if (r.right > window.innerWidth + 20 && out.length < 3)
              out.push(el.tagName + '.' + el.className + ' ' + Math.round(r.right));
          }); return out; }""")
        problems.append(f"{label}: page is {width[0]}px wide in a {width[1]}px viewport: {wide}")
    page.remove_listener("request", on_request)
    page.remove_listener("response", on_response)
    return problems


def _search_pages(team: Any, w: dict[str, Any], p: str) -> dict[str, str]:
    """Search results, counts and labels over the hostile world; a label named by a hostile hand marks
    the hostile rollout (its note too), so the trajectory and the search show its chip. The search pages
    load their counts (htmx) while check_page waits."""
    from urllib.parse import quote

    from deeprepo_web.labels.services import label_create, mark_create
    from deeprepo_web.search.indexer import search_index_update

    search_index_update()  # what beat does after ingest
    label = label_create(project=team.project, name=typed(100), colour="#d9480f", description=typed(500))
    mark_create(label=label, rollout=Rollout.objects.get(pk=w["rollout"]), user=team.owner, note=typed(2000))
    return {
        "search_words": f"{p}/search/?q=script+pwned+onerror",
        "search_substring": f"{p}/search/?q=__pwned&mode=substring",
        "search_regex": f"{p}/search/?q=on(error|load)&mode=regex",
        "search_prompt": f"{p}/search/?q=script&in=prompt",
        "search_label": f"{p}/search/?label={quote(label.name)}",
        "explorer_label": f"{p}/?label={quote(label.name)}",  # the labels column and the label menu
        "labels": f"{p}/labels/",
        "judge": f"{p}/judge/",
        "error_signatures": f"{p}/runs/{w['run']}/errors/",
    }


def test_hostile_content_is_inert_on_every_page(api, team, tmp_path, browser_page, live_server, screenshot_dir, client):
    w = build_world(api, team, tmp_path)
    p = f"/p/{team.project.slug}"
    run = f"{p}/runs/{w['run']}"
    pages = {
        "explorer": f"{p}/",
        "explorer_search": f"{p}/?q=script",
        "run": f"{run}/",
        "run_status": f"{run}/status/",
        "rollouts": f"{run}/rollouts/",
        "groups": f"{run}/groups/",
        "trajectory": f"{run}/rollouts/{w['rollout']}/",
        "example": f"{p}/examples/{w['example']}/",
        "example_compare": f"{p}/examples/{w['example']}/compare/?a={w['rollout']}&b={w['sibling']}",
        "compare": f"{p}/compare/?runs={w['run']},{w['other']}",
        "checkpoints": f"{run}/checkpoints/",
        "patch": f"{run}/rollouts/{w['patch']}/patch/",
        "patch_split": f"{run}/rollouts/{w['patch']}/patch/?mode=split",
        "artifacts": f"{run}/artifacts/",
        "shares": f"{p}/shares/",
        "jobs": f"{p}/jobs/",
        "job": f"{p}/jobs/{w['job']}/",
        "job_launch_form": f"{p}/jobs/new/{w['template']}/",
        "clusters": f"{p}/clusters/",
        "cluster_edit": f"{p}/clusters/{w['cluster']}/",
        "import": f"{p}/import/",
        "import_job": f"{p}/import/{w['import']}/",
        "settings": f"{p}/settings/",
        **_search_pages(team, w, p),
    }
    only = os.environ.get("HOSTILE_ONLY")  # debugging aid: a comma-separated subset of the labels
    if only:
        pages = {k: v for k, v in pages.items() if k in only.split(",")}
        client.force_login(team.owner)
        for k, v in pages.items():
            with open(os.path.join(screenshot_dir, f"hostile_{k}.html"), "wb") as f:
                f.write(client.get(v).content)
    page = browser_page(team.owner)
    page.add_init_script(INIT)
    problems: list[str] = []
    for label, path in pages.items():
        problems += check_page(page, live_server.url + path, live_server.url, label)
        if label in ("trajectory", "explorer", "run", "compare"):
            page.screenshot(path=os.path.join(screenshot_dir, f"hostile_{label}.png"), full_page=False)

    # A share page, anonymously.
    anon = browser_page(None)
    anon.add_init_script(INIT)
    problems += check_page(anon, f"{live_server.url}/s/{w['token']}", live_server.url, "share")
    anon.screenshot(path=os.path.join(screenshot_dir, "hostile_share.png"))
    assert problems == [], "\n".join(problems)


def test_exports_of_hostile_runs_are_text_not_html(api, team, tmp_path, client):
    w = build_world(api, team, tmp_path)
    client.force_login(team.owner)
    base = f"/p/{team.project.slug}/compare/?runs={w['run']},{w['other']}"
    md = client.get(base + "&format=md&title=" + SCRIPT)
    csv = client.get(base + "&format=csv")
    for res, kind in ((md, "text/markdown"), (csv, "text/csv")):
        assert res.status_code == 200
        assert res["Content-Type"].startswith(kind)
        assert res["Content-Disposition"].startswith("attachment")  # downloaded, never rendered as a page
        assert res.get("X-Content-Type-Options") == "nosniff"
    # A cell that starts with = + - @ is a formula in a spreadsheet; the export neutralises it.
    for line in csv.content.decode().splitlines():
        for cell in line.split(","):
            assert not cell.lstrip('"').startswith(("=", "+", "@")), cell[:80]
    # The status partial and the JSON the pages embed carry the text escaped.
    res = client.get(f"/p/{team.project.slug}/runs/{w['run']}/status/")
    assert SCRIPT.encode() not in res.content
    res = client.get(f"/p/{team.project.slug}/runs/{w['run']}/rollouts/{w['rollout']}/")
    assert b"<script>window.__pwned" not in res.content
    assert json.dumps(SCRIPT).encode() not in res.content
