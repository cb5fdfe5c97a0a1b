"""Runs with one point and eval runs: single-value metrics as a scoreboard, charts only for series
of two steps or more, an eval summary from the rollouts (mean reward with a 95 % CI, pass rate, n,
components, turns, tokens, cost) on the run page and in the runs table; no empty GRPO health boxes.
Real sample files from ../shared/samples (verifiers, Inspect, Prime hosted) and a TRL trainer_state."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from deeprepo_web.importers.pipeline import import_path
from deeprepo_web.runs.models import MetricSeries, Rollout, Run

WORDLE = "verifiers_eval/wordle--qwen3-30b-a3b-thinking-2507__50bdff53"
MMLU = "inspect_ai/mmlu-summary-choices.eval"
PRIME = "prime_hosted_rl/bp6qd19u06wzeqkdrf0h24xx"


def _imported(team: Any, path: Path) -> list[Run]:
    report = import_path(project=team.project, path=path)
    assert report.runs, report
    return list(Run.objects.filter(project=team.project).order_by("created_at"))


def _chart_keys(html: str) -> list[str]:
    m = re.search(r'<script id="chart-config" type="application/json">(.*?)</script>', html, re.S)
    assert m is not None
    return [k["key"] for k in json.loads(m.group(1))["keys"]]


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.mark.django_db
def test_verifiers_eval_gets_a_summary_from_its_rollouts(client: Any, team: Any, samples: Path) -> None:
    from deeprepo_web.analysis import stats
    from deeprepo_web.explorer.templatetags.explorer_format import num

    (run,) = _imported(team, samples / WORDLE)
    rewards = [r for r in Rollout.objects.filter(run=run).order_by("id").values_list("reward", flat=True)]
    ci = stats.bootstrap_ci(rewards, n_resamples=4000)
    client.force_login(team.viewer)
    html = client.get(f"/p/demo/runs/{run.public_id}/").content.decode()
    text = _text(html)
    assert 'id="eval-summary"' in html and "from 15 rollouts" in text
    lead = _text(html.split('data-score="reward">')[1].split("</div>")[0])
    assert lead.split() == ["mean", "reward", num(ci.estimate), "95", "%", "CI", num(ci.lo), "–", num(ci.hi)]
    assert "pass rate" in text and "check_answer_reward_func" in text and "partial_credit_reward_func" in text
    # The runs table's reward column shows the mean reward instead of "—".
    table = client.get("/p/demo/").content.decode()
    cell = re.search(rf'data-run="{run.public_id}".*?<td class="num reward c-reward"[^>]*>([^<]*)</td>', table, re.S)
    assert cell is not None and cell.group(1).strip() not in ("", "—")
    assert float(cell.group(1)) == pytest.approx(sum(rewards) / len(rewards), abs=1e-3)
    assert 'title="mean reward of 15 rollouts"' in table


@pytest.mark.django_db
def test_inspect_eval_reward_column_and_summary(client: Any, team: Any, samples: Path) -> None:
    (run,) = _imported(team, samples / MMLU)
    client.force_login(team.viewer)
    html = client.get(f"/p/demo/runs/{run.public_id}/").content.decode()
    assert 'id="eval-summary"' in html and "from 1 rollout" in _text(html)
    table = client.get("/p/demo/").content.decode()
    cell = re.search(rf'data-run="{run.public_id}".*?<td class="num reward c-reward"[^>]*>([^<]*)</td>', table, re.S)
    mean = Rollout.objects.get(run=run).reward
    assert cell is not None and float(cell.group(1)) == pytest.approx(mean)


@pytest.mark.django_db
def test_prime_hosted_charts_only_series_with_two_steps(client: Any, team: Any, samples: Path) -> None:
    runs = _imported(team, samples / PRIME)
    client.force_login(team.viewer)
    for run in runs:
        html = client.get(f"/p/demo/runs/{run.public_id}/").content.decode()
        charted = set(_chart_keys(html))
        multi = set(MetricSeries.objects.filter(run=run, count__gt=1).values_list("key", flat=True))
        single = set(MetricSeries.objects.filter(run=run, count__lte=1).values_list("key", flat=True))
        assert charted == multi
        for key in single:
            assert f'data-key="{key}"' in html  # each one-point series is a number on the scoreboard


@pytest.mark.django_db
def test_trl_state_with_one_log_row_is_a_scoreboard(client: Any, team: Any, tmp_path: Path) -> None:
    # A TRL trainer_state.json as Trainer writes it, stopped after its first logging step.
    out = tmp_path / "trl-out"
    out.mkdir()
    (out / "trainer_state.json").write_text(json.dumps({
        "best_metric": None, "epoch": 0.01, "global_step": 10, "is_world_process_zero": True,
        "log_history": [{"epoch": 0.01, "grad_norm": 1.25, "learning_rate": 1e-06, "loss": 0.0123,
                         "reward": 0.4375, "reward_std": 0.21, "step": 10}],
        "logging_steps": 10, "max_steps": 1000, "num_train_epochs": 1, "train_batch_size": 8,
    }))
    (run,) = _imported(team, out)
    client.force_login(team.viewer)
    html = client.get(f"/p/demo/runs/{run.public_id}/").content.decode()
    assert _chart_keys(html) == []
    board = html.split('id="scoreboard"')[1]
    for key, shown in (("reward", "0.4375"), ("loss", "0.0123"), ("grad_norm", "1.25")):
        assert re.search(rf'data-key="{key}">\s*<span class="label"[^>]*>{key}</span>\s*'
                         rf'<span class="value">{shown}</span>', board), key


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_eval_page_shows_numbers_not_empty_boxes(browser_page: Any, live_server: Any, team: Any, samples: Path,
                                                screenshot_dir: str) -> None:
    (evalrun,) = _imported(team, samples / WORDLE)
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/runs/{evalrun.public_id}/")
    page.wait_for_load_state("networkidle")
    assert page.locator("#eval-summary .score.lead .value").is_visible()
    assert page.locator("#eval-summary .score.lead .ci").inner_text().startswith("95 % CI")
    assert page.locator("#health-family").is_hidden()
    assert page.get_by_text("no training rollouts with steps").count() == 0
    assert page.locator(".panel").filter(has=page.locator(".empty")).count() == 0
    assert page.locator("#chart-toolbar").is_hidden()  # nothing to chart: no chart tools
    page.screenshot(path=os.path.join(screenshot_dir, "run-eval.png"), full_page=True)

    one, _ = _one_point_run(team)
    page.goto(f"{live_server.url}/p/demo/runs/{one.public_id}/")
    page.wait_for_load_state("networkidle")
    assert page.locator("#scoreboard .score").count() == 4
    assert page.locator('#scoreboard .score[data-key="kl"] .value').inner_text() == "nan"
    assert page.locator('.panel[data-key="reward"]').count() == 0  # a point is not a curve
    assert page.locator('.panel[data-key="loss"][data-drawn="1"]').count() == 1
    assert page.locator(".panel .empty").count() == 0 and page.locator("#health-family").is_hidden()
    page.screenshot(path=os.path.join(screenshot_dir, "run-one-point.png"), full_page=True)
    assert page.watched.errors == []


def _one_point_run(team: Any) -> tuple[Run, bool]:
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.services import run_create

    run, created = run_create(project=team.project, name="step-40-eval", kind="eval", status="finished")
    metrics_ingest(run=run, points=[{"step": 40, "values": {"reward": 0.61, "accuracy": 0.5, "eval/len": 812.0}}])
    metrics_ingest(run=run, points=[{"step": s, "values": {"loss": 1.0 / (s + 1)}} for s in range(5)])
    # Two steps but never a number (a diverged metric): nothing to draw either.
    metrics_ingest(run=run, points=[{"step": s, "values": {"kl": float("nan")}} for s in range(2)])
    return run, created


@pytest.mark.django_db
def test_one_point_reward_has_a_number_but_no_sparkline(client: Any, team: Any) -> None:
    run, _ = _one_point_run(team)
    client.force_login(team.viewer)
    table = client.get("/p/demo/").content.decode()
    row = re.search(rf'<tr data-run="{run.public_id}">.*?</tr>', table, re.S)
    assert row is not None and ">0.61</td>" in row.group(0)
    assert "<polyline" not in row.group(0)  # a flat line from one point would read as "steady"


@pytest.mark.django_db
def test_train_run_lists_its_evals_with_their_reward(client: Any, team: Any) -> None:
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create
    from tests.factories import rollout

    train, _ = run_create(project=team.project, name="grpo", status="finished")
    ev, _ = run_create(project=team.project, name="grpo-eval-40", kind="eval", parent=train, checkpoint_step=40,
                       status="finished")
    rollouts_ingest(run=ev, rollouts=[rollout(f"ex-{i}", reward=r, step=None, uid=f"e{i}")
                                      for i, r in enumerate([0.0, 0.25, 0.5, 0.75])])
    client.force_login(team.viewer)
    html = client.get(f"/p/demo/runs/{train.public_id}/").content.decode()
    row = re.search(r"<tr><td class=\"num\">40</td>.*?</tr>", html, re.S)
    assert row is not None and '<td class="num">0.375</td>' in row.group(0)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_run_with_165_keys_folds_its_families(browser_page: Any, live_server: Any, team: Any, samples: Path,
                                             screenshot_dir: str) -> None:
    (run,) = _imported(team, samples / PRIME)
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/")
    page.wait_for_selector('.panel[data-key="reward/all/mean"][data-drawn="1"]')
    open_panels = page.locator("details.family[open] .panel[data-key]").count()
    assert 0 < open_panels <= 24 + 12 and page.locator("details.family:not([open])").count() > 0
    height = page.evaluate("document.body.scrollHeight")
    assert height < 8000  # the issue measured 16,884 px with every family open
    name = page.locator("#charts details.family:not([open])").first.get_attribute("data-family")
    folded = page.locator(f'#charts details.family[data-family="{name}"]')
    folded.locator("summary").click()
    folded.locator('.panel[data-drawn="1"]').first.wait_for()
    page.fill("#chart-filter", "decode_len/all/max")  # a match inside a folded family is shown
    expect_visible = page.locator('.panel[data-key="decode_len/all/max"]')
    expect_visible.wait_for(state="visible")
    assert page.locator("#health-family").is_hidden()  # the filter applies to GRPO health too
    page.fill("#chart-filter", "")
    page.locator("#health-family").scroll_into_view_if_needed()
    page.wait_for_selector('#health-grid .panel[data-drawn="1"]')  # its one step of rollouts (40)
    assert page.locator('#health-grid .panel[data-health="tokens"]').is_hidden()  # no token counts: no box
    page.screenshot(path=os.path.join(screenshot_dir, "run-prime-hosted.png"), full_page=False)
    assert page.watched.errors == []
