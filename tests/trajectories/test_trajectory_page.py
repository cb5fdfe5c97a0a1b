"""Trajectory page: header, nested sub-calls, collapsed long outputs, turn paging, blob bodies."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.factories import rollout
from tests.trajectories.conftest import ingest


@pytest.fixture
def viewer(client, team):
    client.force_login(team.viewer)
    return client


def _url(run, rid, name="trajectory"):
    return reverse(name, args=["demo", run.public_id, rid])


def test_header_shows_reward_components_and_group_neighbours(viewer, loaded):
    rid = loaded.ids["s1-ex-c-1"]
    html = viewer.get(_url(loaded.run, rid)).content.decode()
    assert f"Rollout {rid}" in html
    assert '<span class="muted">f1</span> 0.500' in html
    assert "sandbox timed out" in html  # the error, shown in the header
    assert 'href="/p/demo/examples/' in html
    prev_href = _url(loaded.run, loaded.ids["s1-ex-c-0"])
    next_href = _url(loaded.run, loaded.ids["s1-ex-c-2"])
    assert f'href="{prev_href}" class="pn" rel="prev"' in html
    assert f'href="{next_href}" class="pn" rel="next"' in html
    assert html.count('class="chip small') == 4  # the four rollouts of the group


def test_nested_sub_calls_render_inside_their_llm_batch(viewer, loaded):
    from deeprepo_web.runs.models import ToolCall

    rid = loaded.ids["s0-ex-a-0"]
    html = viewer.get(_url(loaded.run, rid)).content.decode()
    batch = ToolCall.objects.filter(rollout_id=rid, name="llm_batch").first()
    start = html.index(f'id="call-{batch.pk}"')
    block = html[start : html.index("</ol>", start)]
    assert block.count('<li>') == 2
    assert "llm_query" in block and "sub-model" in block
    assert "SQL injection" in block and "MD5 hashing" in block
    assert "50 → 10 tok" in block  # sub-call tokens
    assert "audit a.py" in block  # its prompt
    assert '<details class="reasoning">' in html  # reasoning collapsed


def test_markdown_code_is_highlighted_and_turns_have_anchors(viewer, team):
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="md")
    rec = rollout("md", turns=0, uid="md")
    rec["turns"].append({"role": "assistant", "content": "Run:\n\n```python\nimport os\nprint('x')\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |",
                         "tool_calls": [{"name": "python", "arguments": {"code": "for i in range(3):\n    print(i)"},
                                         "output": "\x1b[31mred\x1b[0m"}]})
    ids = ingest(run, [rec])
    html = viewer.get(_url(run, ids["md"])).content.decode()
    assert '<div class="hl"><pre>' in html and '<span class="kn">import</span>' in html
    assert '<span class="k">for</span>' in html  # the code argument, highlighted
    assert "<table>" in html
    assert '<span class="ansi-f1">red</span>' in html and "\x1b" not in html
    assert 'id="turn-1"' in html and 'href="#turn-1"' in html


def test_long_outputs_start_collapsed_with_show_all(viewer, team):
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="long")
    rec = rollout("long", turns=0, uid="long")
    rec["turns"].append({"role": "assistant", "content": "x", "tool_calls": [
        {"name": "many_lines", "output": "\n".join(f"line {i}" for i in range(100))},
        {"name": "many_chars", "output": "y" * 5000},
        {"name": "short", "output": "ok"},
    ]})
    ids = ingest(run, [rec])
    html = viewer.get(_url(run, ids["long"])).content.decode()
    assert html.count('out-wrap clamped') == 2
    assert "show all (100 lines)" in html
    assert "line 99" in html  # the full text is in the page; CSS clamps it until expanded


def test_a_2000_turn_rollout_opens_with_one_page_and_bounded_queries(viewer, team, django_assert_max_num_queries):
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="long-horizon")
    ids = ingest(run, [rollout("long", turns=2000, uid="t2000")])
    url = _url(run, ids["t2000"])
    with django_assert_max_num_queries(15):
        res = viewer.get(url)
    html = res.content.decode()
    turns = re.findall(r'<article class="turn[^"]*" id="turn-(\d+)"', html)
    assert len(turns) == 50 and turns[0] == "0" and turns[-1] == "49"
    assert 'hx-get="{}?from=50"'.format(_url(run, ids["t2000"], "trajectory_turns")) in html
    assert f'href="{url}?from=50"' in html  # plain link works without JS

    with django_assert_max_num_queries(12):
        more = viewer.get(_url(run, ids["t2000"], "trajectory_turns"), {"from": "1950"})
    chunk = more.content.decode()
    assert "<html" not in chunk
    assert re.findall(r'id="turn-(\d+)"', chunk)[0] == "1950"
    assert len(re.findall(r'<article class="turn', chunk)) == 50
    assert 'hx-get="{}?from=2000"'.format(_url(run, ids["t2000"], "trajectory_turns")) in chunk  # turn 2000 is the last


def test_a_page_of_turns_reads_its_calls_from_its_rollouts_document(viewer, team):
    """runs_toolcall is a view over each rollout's document (runs 0020): a read of calls that named only
    their turns would expand every document. Postgres is told to avoid sequential scans; the plan must
    still find the one document by its key and read no other table."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from deeprepo_web.runs.models import Rollout
    from deeprepo_web.runs.services import run_create
    from deeprepo_web.runs.turns import turns_page
    from tests.plans import plan

    run, _ = run_create(project=team.project, name="calls-by-rollout")
    ids = ingest(run, [rollout("long", turns=120, uid="t120"), rollout("other", turns=3, uid="t3")])
    with CaptureQueriesContext(connection) as ctx:
        page = viewer.get(_url(run, ids["t120"])).content.decode()
        viewer.get(_url(run, ids["t120"], "trajectory_turns"), {"from": "50"})
        turns = turns_page(rollout=Rollout.objects.get(pk=ids["t120"]), start=50, limit=10)
    assert "audit a.py" in page and [c.name for c in turns[0].tool_calls.all()].count("llm_query") == 2
    reads = [q["sql"] for q in ctx.captured_queries
             if any(f'FROM "{t}"' in q["sql"] for t in ("runs_toolcall", "runs_turn", "runs_rolloutturns"))]
    # The page and its next turns read the document itself (turns_after); the page's turn count and
    # turns_page read the views.
    assert sum('FROM "runs_rolloutturns"' in sql for sql in reads) == 2 and len(reads) == 5
    for sql in reads:
        explained = plan(sql)
        assert "runs_rolloutturns_pkey" in explained and "Seq Scan" not in explained, explained


def test_jumping_to_an_anchor_loads_up_to_it(viewer, team):
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="jump")
    ids = ingest(run, [rollout("j", turns=300, uid="j")])
    chunk = viewer.get(_url(run, ids["j"], "trajectory_turns"), {"from": "50", "upto": "212"}).content.decode()
    found = [int(i) for i in re.findall(r'id="turn-(\d+)"', chunk)]
    assert found[0] == 50 and 212 in found and found[-1] <= 260
    plain = viewer.get(_url(run, ids["j"]), {"from": "250"}).content.decode()
    assert re.findall(r'id="turn-(\d+)"', plain)[0] == "250"
    assert "Turns before #250 are not shown" in plain


def test_load_all_fetches_a_blob_body(viewer, team, settings):
    from deeprepo_web.runs.models import ToolCall, Turn
    from deeprepo_web.runs.services import run_create

    settings.DEEPREPO_BLOB_THRESHOLD = 1024
    run, _ = run_create(project=team.project, name="blobs")
    rec = rollout("b", turns=0, uid="b")
    big = "".join(f"<b>{i}</b>\n" for i in range(3000))
    rec["turns"].append({"role": "tool", "content": big})
    rec["turns"].append({"role": "assistant", "content": "x", "tool_calls": [{"name": "dump", "output": big}]})
    ids = ingest(run, [rec])
    call = ToolCall.objects.get(rollout_id=ids["b"], name="dump")
    turn = Turn.objects.get(rollout_id=ids["b"], role="tool")
    assert call.output_blob and turn.content_blob
    html = viewer.get(_url(run, ids["b"])).content.decode()
    body_url = reverse("trajectory_body", args=["demo", run.public_id, ids["b"], "call", call.pk])
    assert f'hx-get="{body_url}"' in html and "load all" in html
    full = viewer.get(body_url).content.decode()
    assert "&lt;b&gt;2999&lt;/b&gt;" in full and "<b>" not in full
    turn_url = reverse("trajectory_body", args=["demo", run.public_id, ids["b"], "turn", turn.pk])
    assert "&lt;b&gt;2999&lt;/b&gt;" in viewer.get(turn_url).content.decode()
    # A body id of another rollout, or an unknown kind, is a 404.
    other = ids_other = ingest(run, [rollout("c", turns=1, uid="c")])["c"]
    assert viewer.get(reverse("trajectory_body", args=["demo", run.public_id, other, "call", call.pk])).status_code == 404
    assert viewer.get(reverse("trajectory_body", args=["demo", run.public_id, ids["b"], "x", call.pk])).status_code == 404
    assert ids_other


def test_rollout_under_the_wrong_run_or_project_is_404(viewer, loaded):
    rid = loaded.ids["s0-ex-a-0"]
    assert viewer.get(reverse("trajectory", args=["demo", loaded.eval_run.public_id, rid])).status_code == 404
    assert viewer.get(reverse("trajectory", args=["other", loaded.run.public_id, rid])).status_code == 404
