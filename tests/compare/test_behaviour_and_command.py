"""Behaviour metrics computed at ingest, checkpoint flips and `manage.py compare`."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from deeprepo_web.compare import checkpoints
from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
from deeprepo_web.runs.models import Rollout
from deeprepo_web.runs.services import run_create
from tests.compare.seed002 import seed_002

pytestmark = pytest.mark.django_db


def test_behaviour_stored_at_ingest(team: Any) -> None:
    run, _ = run_create(project=team.project, name="m2.5 root", kind="eval", model="minimax-m2.5")
    err = {"name": "llm_batch", "is_error": True,
           "output": "Traceback (most recent call last):\n  File \"<exec>\"\nSyntaxError: f-string: unmatched '('"}
    turns = [{"role": "assistant", "tool_calls": [dict(err) for _ in range(6)]} for _ in range(3)]
    turns[0]["tool_calls"].append({"name": "llm_batch", "sub_calls": [
        {"name": "llm_query", "model": "minimax-m2.5", "input_tokens": 100, "output_tokens": 10},
        {"name": "llm_query", "model": "minimax-m2.5", "input_tokens": 200, "output_tokens": 20, "cost": 0.5},
    ]})
    rollouts_ingest(run=run, rollouts=[{"example_key": "jianghu", "reward": 0.1, "turns": turns, "metrics": {"x": 1}}])
    b = Rollout.objects.get(run=run).metrics
    assert b["x"] == 1
    beh = b["behaviour"]
    assert beh["tool_calls"] == {"llm_batch": 19}
    assert beh["sub_calls"] == 2 and beh["batches"] == 19 and beh["tool_errors"] == 18
    assert beh["repeated_error_max"] == 18
    assert beh["repeated_error"].startswith("SyntaxError: f-string")
    assert beh["sub_tokens"] == {"minimax-m2.5": [300, 30, 0.5, 1]}


def test_whether_runs_delegate_is_asked_of_the_rollouts_indexed_tool_names(team: Any) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from deeprepo_web.compare.options import runs_use_tool

    runs = [run_create(project=team.project, name=f"r{i}", kind="eval")[0] for i in range(2)]
    rollouts_ingest(run=runs[0], rollouts=[{"example_key": "a", "reward": 1.0, "turns": [
        {"role": "assistant", "tool_calls": [{"name": "read_file"}]}]}])
    rollouts_ingest(run=runs[1], rollouts=[{"example_key": "a", "reward": 0.0, "turns": [
        {"role": "assistant", "tool_calls": [{"name": "llm_batch", "sub_calls": [{"name": "llm_query"}]}]}]}])
    with CaptureQueriesContext(connection) as queries:
        assert runs_use_tool(runs, "llm_batch") is True
        assert runs_use_tool(runs[:1], "llm_batch") is False
        assert runs_use_tool(runs[:1], "read_file") is True
    # The rows' tool names and their GIN index, not a read of every rollout's behaviour counts (docs/scale.md).
    assert all('"runs_rollout"."tools" @>' in q["sql"] and "behaviour" not in q["sql"]
               for q in queries.captured_queries)


def test_checkpoint_flips(team: Any) -> None:
    s = seed_002(team.project)
    prog = checkpoints.progression(run=s["train"], threshold=0.95)
    assert [p.step for p in prog.points] == [0, 50, 99]
    assert [round(p.ci.estimate, 3) for p in prog.points] == [0.785, 0.9, 0.987]
    assert prog.n_fail_to_pass == 3 and prog.n_pass_to_fail == 0
    back = checkpoints.progression(run=s["train"], threshold=0.95, a="99", b="50")
    assert back.n_pass_to_fail == 1  # mini-repo-flask-auth: 0.962 -> 0.80 at step 50
    flip = back.flips[0]
    assert flip.direction == "pass_to_fail" and flip.example.key == "mini-repo-flask-auth"
    assert Rollout.objects.get(pk=flip.rollout_a).run == s["Qwen3-30B-A3B (GRPO trained)"]
    assert Rollout.objects.get(pk=flip.rollout_b).reward < 0.95


def test_compare_command_markdown_and_csv(team: Any) -> None:
    s = seed_002(team.project, with_training=False)
    out = io.StringIO()
    call_command("compare", "Qwen3-8B (untrained)", s["Qwen3-30B-A3B (untrained)"].public_id,
                 "Qwen3-30B-A3B (GRPO trained)", "--baseline", "Qwen3-30B-A3B (untrained)", stdout=out)
    md = out.getvalue()
    assert "| Average reward | 0.551 (σ 0.176) | 0.785 (σ 0.100) | 0.987 (σ 0.018) |" in md
    assert "+0.202 (+25.7%)" in md
    assert "| Zero-delegation rate (no llm\\_batch) | 17% (1/6) | 0% (0/6) | 0% (0/6) |" in md
    out = io.StringIO()
    call_command("compare", "Qwen3-8B (untrained)", "Qwen3-30B-A3B (untrained)", "--format", "csv", stdout=out)
    assert out.getvalue().startswith("run_id,run_name,metric,value")
    with pytest.raises(CommandError, match="no run with id or name 'nope'"):
        call_command("compare", "nope", "Qwen3-8B (untrained)")
    with pytest.raises(CommandError, match="at least 2 runs"):
        call_command("compare", "Qwen3-8B (untrained)")


def test_bad_compare_queries_say_what_is_wrong(client: Any, team: Any) -> None:
    s = seed_002(team.project, with_training=False)
    client.force_login(team.viewer)
    ids = ",".join(r.public_id for r in list(s.values())[:2])
    cases = {
        "zero=bogus": b"zero: expected tool:NAME or metric:NAME",
        "effects=A>Z": b"effects: ",
        "pass=abc": b"pass: ",
        "baseline=nope": b"baseline: ",
    }
    for q, msg in cases.items():
        resp = client.get(f"/p/demo/compare/?runs={ids}&{q}")
        assert resp.status_code == 400 and msg in resp.content, q
    resp = client.get(f"/p/demo/compare/?runs={ids.split(',')[0]}")
    assert resp.status_code == 400 and b"at least 2 runs" in resp.content


def test_hostile_run_names_are_escaped(client: Any, team: Any) -> None:
    s = seed_002(team.project, with_training=False)
    run = s["Qwen3-8B (untrained)"]
    run.name = '<img src=x onerror=alert(1)>|=cmd|'
    run.save()
    client.force_login(team.viewer)
    ids = f"{run.public_id},{s['Qwen3-30B-A3B (untrained)'].public_id}"
    html = client.get(f"/p/demo/compare/?runs={ids}").content
    assert b"<img src=x" not in html and b"&lt;img src=x" in html
    md = client.get(f"/p/demo/compare/?runs={ids}&format=md").content.decode()
    assert "| <img" not in md and "| \\<img src=x onerror=alert(1)\\>\\|=cmd\\| |" in md
    run.name = "=HYPERLINK(\"http://evil\")"
    run.save()
    csv_text = client.get(f"/p/demo/compare/?runs={ids}&format=csv").content.decode()
    assert f"\n{run.public_id},\"'=HYPERLINK" in csv_text
    assert ",=HYPERLINK" not in csv_text and ',"=HYPERLINK' not in csv_text
