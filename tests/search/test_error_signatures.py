"""Error signatures: numbers, paths and ids stripped, grouped, counted per step, with examples."""

from __future__ import annotations

from django.urls import reverse

from deeprepo_web.search.signatures import error_signatures

from .conftest import _ingest, _turn, rec


def _call_error(text: str) -> dict:
    return {"name": "run_code", "arguments": {}, "output": text, "is_error": True}


def test_signatures_group_what_differs_only_by_numbers_paths_and_ids(team):
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="errs")
    records = []
    for i in range(6):
        tb = f"Traceback (most recent call last):\n  File \"/work/job-{i}/x.py\", line {i}\nFileNotFoundError: /tmp/run-{i}/data.csv"
        records.append(rec(f"ex-{i}", uid=f"e{i}", step=i % 3, turns=[
            {"role": "user", "content": "go"}, _turn("ok", calls=[_call_error(tb)])],
            error=f"sandbox 0x{i:04x}deadbeef timed out after {30 + i}s" if i < 4 else ""))
    ids = _ingest(run, records)
    sigs, span = error_signatures(run=run)
    assert span == (0, 2)
    by_text = {s.text: s for s in sigs}
    tool = by_text["FileNotFoundError: <path>"]
    assert (tool.kind, tool.tool, tool.count, tool.rollouts) == ("tool", "run_code", 6, 6)
    assert tool.per_step == {0: 2, 1: 2, 2: 2}
    assert tool.examples[0] == (ids["e5"], 1)  # newest first, at the turn of the call
    final = by_text["sandbox <id> timed out after <n>s"]
    assert (final.kind, final.count) == ("final", 4)


def test_past_the_top_signatures_each_keeps_its_own_steps_and_examples(team):
    """More signatures than the page shows (TOP): the first TOP by count, then text, each with its own
    per-step counts and its 3 newest rollouts at the turn of their first such error, as the records say."""
    from deeprepo_web.runs.services import run_create
    from deeprepo_web.search.signatures import TOP

    run, _ = run_create(project=team.project, name="many-errs")
    records, expected = [], {}
    for k in range(TOP + 10):
        text = f"ValueError: code {chr(97 + k // 26)}{chr(97 + k % 26)}"
        n = 1 + k % 4
        for j in range(n):
            turns = [{"role": "user", "content": "go"}, _turn("a", calls=[_call_error(text)])]
            if j == 0:  # the same error again later in the rollout: counted twice, its example at the first
                turns.append(_turn("b", calls=[_call_error(text)]))
            records.append(rec(f"ex-{k}", uid=f"s{k}-{j}", step=j * 2, turns=turns))
        expected[text] = (n + 1, n, {j * 2: 2 if j == 0 else 1 for j in range(n)},
                          [f"s{k}-{j}" for j in reversed(range(n))][:3])
    ids = _ingest(run, records)
    sigs, _ = error_signatures(run=run)
    order = sorted(expected, key=lambda t: (-expected[t][0], t.encode()))[:TOP]
    assert [s.text for s in sigs] == order
    for sig in sigs:
        count, rollouts, per_step, newest = expected[sig.text]
        assert (sig.count, sig.rollouts, sig.per_step) == (count, rollouts, per_step), sig.text
        assert sig.examples == [(ids[uid], 1) for uid in newest], sig.text


def test_errors_page_escapes_and_links(client, team, corpus):
    client.force_login(team.viewer)
    html = client.get(reverse("run_errors", args=["demo", corpus.run.public_id])).content.decode()
    assert "FileNotFoundError: no such file &lt;path&gt;" in html
    assert f'/rollouts/{corpus.ids["toolerr"]}/?upto=1#turn-1"' in html
    client.force_login(team.outsider)
    assert client.get(reverse("run_errors", args=["demo", corpus.run.public_id])).status_code == 404


def test_a_long_error_output_is_grouped_by_its_own_last_line(team, settings):
    """An output past the blob threshold is stored as a preview; its last line (the exception) is
    taken from the whole output at ingest."""
    from deeprepo_web.runs.services import run_create

    settings.DEEPREPO_BLOB_THRESHOLD = 64
    run, _ = run_create(project=team.project, name="long-errs")
    tb = "Traceback (most recent call last):\n" + "  File \"x.py\", line 1, in f\n" * 20 + "MemoryError: 12 GB\n"
    _ingest(run, [rec("ex-0", uid="l0", step=0, turns=[_turn("ok", calls=[_call_error(tb)])])])
    sigs, _ = error_signatures(run=run)
    assert [(s.tool, s.text, s.count) for s in sigs] == [("run_code", "MemoryError: <n> GB", 1)]


def test_bars_group_steps_past_the_chart_width():
    """A run of thousands of steps draws at most MAX_BARS bars, each summing the steps it covers."""
    from deeprepo_web.search.chart import MAX_BARS, chart_rows
    from deeprepo_web.search.signatures import _bars

    per_step = {s: 1 for s in range(0, 20_000, 2)}
    bars = _bars(per_step, 0, 19_999)
    assert len(bars) == 299 <= MAX_BARS  # groups of 67 steps
    assert bars[0].title == "steps 0-66: 34" and bars[-1].title.startswith("steps 19966-19999: ")
    assert {b.h for b in bars} <= {60.0, round(60 * 33 / 34, 2), round(60 * 17 / 34, 2)} and max(b.x for b in bars) < 600
    assert [b.title for b in _bars({3: 2, 5: 1}, 3, 5)] == ["step 3: 2", "step 5: 1"]  # few steps: one bar each

    from deeprepo_web.runs.models import Run
    rows = chart_rows({1: {s: (1, 4) for s in range(10_000)} | {None: (5, 5)}}, {1: Run(name="r")})
    assert len(rows[0].bars) == 295 and rows[0].bars[0].title == "steps 0-33: 34 of 136 rollouts (25%)"
    assert rows[0].matched == 10_005 and (rows[0].first_step, rows[0].last_step) == (0, 9_999)


def test_a_rare_match_keeps_a_bar_one_can_see_and_hover():
    """1 of a step's 512 rollouts over 280 steps was a bar 0.12 units high and 1.1 wide: invisible."""
    from deeprepo_web.runs.models import Run
    from deeprepo_web.search.chart import HEIGHT, MIN_BAR_H, MIN_BAR_W, WIDTH, chart_rows

    per_step = {s: (1 if s in (0, 171, 279) else 0, 512) for s in range(280)}
    bars = chart_rows({1: per_step}, {1: Run(name="r")})[0].bars
    hits = [b for b in bars if b.title.endswith("1 of 512 rollouts (<1%)")]
    assert len(hits) == 3 and len(bars) == 280
    assert all(b.h == MIN_BAR_H and b.w == MIN_BAR_W and b.y == HEIGHT - MIN_BAR_H for b in hits)
    assert hits[0].x == 0 and WIDTH - MIN_BAR_W - 1 < hits[-1].x <= WIDTH - MIN_BAR_W  # widened inside the chart
    assert abs(hits[1].x + MIN_BAR_W / 2 - (171 * WIDTH / 280 + bars[170].w / 2)) < 0.1  # about its own step
    assert {b.h for b in bars if b not in hits} == {0.0}  # a step without a match draws nothing
