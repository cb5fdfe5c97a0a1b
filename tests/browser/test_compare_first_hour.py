"""Compare and share, as a newcomer meets them: the zero-X rate only for tools the runs called, no
404 for a run without the chart's metric, a PNG export with a title and a legend, curves on the
shared comparison, and run labels that do not run into each other with four runs."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest

from tests.factories import rollout

pytestmark = pytest.mark.django_db(transaction=True)

COLORS = {"A": (59, 91, 219), "B": (232, 89, 12), "C": (43, 138, 62), "D": (174, 62, 201)}


def _runs(team: Any, n: int = 2, *, long_names: bool = False) -> list[Any]:
    """n runs: A (a GRPO train run that delegates with llm_batch, with a reward curve), then evals
    whose agents only read files and log no reward series."""
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create

    out = []
    for i in range(n):
        name = f"run-{'ABCD'[i]}" + ("-qwen3-30b-a3b-grpo-orchestration-checkpoint-step-400" if long_names else "")
        run, _ = run_create(project=team.project, name=name, kind="eval" if i else "train", status="finished")
        records = [rollout(f"ex-{k}", reward=(k + i) % 3 / 2, step=None, uid=f"{i}-{k}", turns=1) for k in range(12)]
        if i:  # these agents never delegate: their only tool is read_file
            for r in records:
                for t in r["turns"]:
                    t["tool_calls"] = [c for c in t.get("tool_calls") or [] if c["name"] == "read_file"]
        rollouts_ingest(run=run, rollouts=records)
        if i == 0:
            metrics_ingest(run=run, points=[{"step": s, "values": {"reward": 0.2 + s / 40}} for s in range(20)])
        else:
            metrics_ingest(run=run, points=[{"step": s, "values": {"eval/acc": 0.5}} for s in range(3)])
        out.append(run)
    return out


def test_zero_rate_is_offered_and_shown_only_for_tools_the_runs_called(client: Any, team: Any) -> None:
    a, b = _runs(team)
    client.force_login(team.viewer)
    html = client.get(f"/p/demo/compare/?runs={a.public_id},{b.public_id}").content.decode()
    row = re.search(r"Zero-delegation rate.*?</tr>", html, re.S)
    assert row is not None
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(0), re.S)
    assert "%" in cells[0] and "—" in re.sub(r"<[^>]+>", "", cells[1])  # B never had llm_batch: no rate
    offered = re.findall(r'<option value="(tool:[^"]+)">', html)
    assert set(offered) == {"tool:llm_batch", "tool:read_file"}  # the tools these runs called, no others


def test_compare_png_curves_and_labels(browser_page: Any, live_server: Any, team: Any, screenshot_dir: str,
                                       tmp_path: Any) -> None:
    runs = _runs(team, 4, long_names=True)
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/compare/?runs={','.join(r.public_id for r in runs)}")
    page.wait_for_selector("#curve-chart .uplot")
    assert page.get_attribute("#curve-chart", "data-drawn") == "1"  # only A logged "reward"
    page.wait_for_timeout(300)
    assert page.watched.errors == []  # no 404 from asking B, C, D for a series they do not have

    labels = page.evaluate("JSON.parse(document.getElementById('strip-chart').dataset.labels)")
    assert len(labels) == 4
    for left, right in zip(labels, labels[1:], strict=False):
        assert left[1] + 2 <= right[0], labels  # each label ends before the next begins

    # The PNG export: a title band with text, the charts, and a legend with each run's colour.
    info = page.evaluate("""() => {
        const data = JSON.parse(document.getElementById('cmp-data').textContent);
        const png = window.deeprepoComparePng(document.getElementById('cmp-charts'), data.runs);
        const ctx = png.getContext('2d'), dpr = window.devicePixelRatio || 1;
        const band = (y0, y1) => ctx.getImageData(0, y0, png.width, y1 - y0).data;
        const top = band(0, Math.round(50 * dpr));
        let ink = 0; for (let i = 0; i < top.length; i += 4) if (top[i] < 100) ink++;
        const h = Math.max(...[...document.querySelectorAll('#cmp-charts canvas')].map(c => c.height));
        const legend = band(Math.round((16 + 34 + 22) * dpr) + h, png.height);  // below the charts
        const seen = new Set();
        for (let i = 0; i < legend.length; i += 4) seen.add(legend[i] + ',' + legend[i + 1] + ',' + legend[i + 2]);
        return {ink: ink, colours: [...seen], url: png.toDataURL('image/png')};
    }""")
    assert info["ink"] > 200  # the title is written
    for rgb in COLORS.values():
        assert ",".join(map(str, rgb)) in info["colours"]  # a swatch per run in the legend
    import base64
    (tmp_path / "export.png").write_bytes(base64.b64decode(info["url"].split(",", 1)[1]))
    (tmp_path / "export.png").rename(os.path.join(screenshot_dir, "compare-export.png"))
    page.screenshot(path=os.path.join(screenshot_dir, "compare-4-runs.png"), full_page=True)


def test_shared_comparison_has_the_curves(browser_page: Any, live_server: Any, team: Any, screenshot_dir: str) -> None:
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.sharing.services import share_create

    a, b = _runs(team)
    metrics_ingest(run=b, points=[{"step": s, "values": {"reward": 0.1 + s / 50}} for s in range(15)])
    _, token = share_create(project=team.project, user=team.owner, kind="comparison", target="",
                            title="A vs B", params={"runs": [a.public_id, b.public_id]})
    anon = browser_page()
    anon.goto(f"{live_server.url}/s/{token}")
    anon.wait_for_selector("#curve-chart .uplot")
    assert anon.get_attribute("#curve-chart", "data-drawn") == "2"
    assert anon.locator("#curve-chart .u-legend").inner_text().count("run-") == 2
    anon.screenshot(path=os.path.join(screenshot_dir, "share-comparison-curves.png"), full_page=True)
    assert anon.watched.errors == []
