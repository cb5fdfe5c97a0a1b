"""Real Chromium, a real Celery worker and a loopback judge: a rubric job over 20 searched rollouts
proposes labels with citations, is cancelled, resumed, and never judges a rollout twice.

The judge endpoint (an OpenAI-compatible server: vLLM or a hosted API) cannot run here; the test
starts a small one on loopback (tests/judge/loopback.py). Everything else is real."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.judge.conftest import judge_server  # noqa: F401  (the loopback judge fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _turn(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def _rollouts(team: Any) -> Any:
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create
    from deeprepo_web.search.indexer import search_index_update
    from tests.factories import rollout

    run, _ = run_create(project=team.project, name="judged-run")
    records = []
    for i in range(20):
        record = rollout(f"ex-{i}", uid=f"r{i}", step=i // 4, turns=0, sample_index=i % 4)
        last = "I give up on this one." if i % 2 == 0 else "All tests pass now."
        record["turns"] = [{"role": "user", "content": f"Task marker-{i}"}, _turn("Looking."), _turn(last)]
        records.append(record)
    rollouts_ingest(run=run, rollouts=records)
    search_index_update()
    return run


def _wait(page: Any, job: Any, statuses: set[str], timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        job.refresh_from_db()
        if job.status in statuses:
            return job
        assert time.monotonic() < deadline, f"job stayed {job.status}, error {job.error!r}"
        page.wait_for_timeout(200)


def test_judge_cancel_resume_never_twice(browser_page, live_server, team, celery_worker, judge_server,  # noqa: F811
                                         screenshot_dir) -> None:
    from deeprepo_web.judge.models import JudgeJob, Verdict
    from deeprepo_web.labels.models import Mark, MarkStatus
    from deeprepo_web.labels.services import label_create

    _rollouts(team)
    label_create(project=team.project, name="gives-up", colour="#c92a2a")
    page = browser_page(team.editor)

    page.goto(f"{live_server.url}/p/demo/judge/")
    page.fill("input[name=base_url]", judge_server.url)
    page.fill("input[name=model]", "loopback-judge")
    page.fill("input[name=api_key]", judge_server.api_key)
    page.fill("input[name=input_per_mtok]", "1.5")
    page.fill("input[name=output_per_mtok]", "6")
    page.click("form.judge-endpoint button.primary")
    page.wait_for_selector("text=API key: stored")
    page.screenshot(path=f"{screenshot_dir}/judge-endpoint.png", full_page=True)
    assert judge_server.api_key not in page.content()

    judge_server.delay = 0.4  # slow enough to cancel part-way
    page.goto(f"{live_server.url}/p/demo/search/?q=marker")
    assert page.locator("li.search-result").count() == 20
    page.click("details.judge-start summary")
    page.screenshot(path=f"{screenshot_dir}/judge-start.png", full_page=True)
    page.fill("textarea[name=rubric]", "The agent gives up before finishing the task.")
    page.select_option("select[name=label_name]", "gives-up")
    page.click("details.judge-start button.primary")
    page.wait_for_url("**/judge/*/")
    job = JudgeJob.objects.get()
    deadline = time.monotonic() + 60
    while job.judged < 3:
        assert time.monotonic() < deadline, f"judge did not start: {job.status} {job.error!r}"
        page.wait_for_timeout(100)
        job.refresh_from_db()
    page.click("#judge-cancel")
    job = _wait(page, job, {"cancelled"})
    at_cancel = job.judged
    assert 3 <= at_cancel < 20
    page.reload()
    assert page.locator("#judge-status").inner_text() == "cancelled"

    judge_server.delay = 0.0
    page.click("#judge-resume")
    job = _wait(page, job, {"done"})
    page.reload()
    page.screenshot(path=f"{screenshot_dir}/judge-job.png", full_page=True)

    # Every rollout judged exactly once, across the cancel and the resume.
    assert job.judged == 20 and Verdict.objects.filter(job=job).count() == 20
    assert sorted(judge_server.requests.values()) == [1] * 20, judge_server.requests
    assert judge_server.unauthorized == 0
    assert job.yes == 10 and (job.input_tokens, job.output_tokens) == (2000, 400)
    assert job.cost == pytest.approx((2000 * 1.5 + 400 * 6) / 1e6)
    assert "$0.0054" in page.locator("#judge-progress").inner_text()
    # "Yes" verdicts cite the turn and propose the label; a person confirms one, rejects another.
    yes = Verdict.objects.filter(job=job, answer=True)
    assert {tuple(v.citations) for v in yes} == {(2,)}
    assert Mark.objects.filter(label__name="gives-up", status=MarkStatus.PROPOSED).count() == 10
    assert page.locator("a.cite[href$='#turn-2']").count() == 10
    page.locator("tr:has(.mark-status) button:has-text('confirm')").first.click()
    page.wait_for_load_state()
    page.locator("tr:has(.mark-status) button:has-text('reject')").first.click()
    page.wait_for_load_state()
    statuses = sorted(Mark.objects.filter(label__name="gives-up").values_list("status", flat=True))
    assert statuses.count("confirmed") == 1 and statuses.count("rejected") == 1
    assert page.watched.errors == []  # type: ignore[attr-defined]
