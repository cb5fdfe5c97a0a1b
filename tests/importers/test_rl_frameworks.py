"""RL framework output folders through `manage.py import`: right counts, linked eval runs, re-import adds nothing."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from deeprepo_web.runs.models import MetricSeries, Rollout, Run

from .conftest import counts


def _import(path, slug: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("import", str(path), "--project", slug, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_verl_output_folder(samples, team):
    out, err = _import(samples / "verl" / "generated-by-verl-0.9.1", team.project.slug)
    assert not err, err
    train = Run.objects.get(project=team.project, kind="train", source="verl")
    assert train.name == "qwen2.5_0.5b_gsm8k_grpo"
    assert counts(train)["rollouts"] == 36
    # groups: 3 prompts x 4 samples per step, one Example per prompt
    assert Rollout.objects.filter(run=train).values("example_id").distinct().count() == 3
    assert Rollout.objects.filter(run=train, step=2).values("example_id", "step").distinct().count() == 3
    assert MetricSeries.objects.get(run=train, key="critic/score/mean").count == 3
    evals = Run.objects.filter(project=team.project, kind="eval", source="verl").order_by("checkpoint_step")
    assert [(e.checkpoint_step, e.parent_id, counts(e)["rollouts"]) for e in evals] == [(0, train.pk, 3), (3, train.pk, 3)]
    assert evals[0].summary["reward/mean"] == pytest.approx(2 / 3) and evals[0].summary["rollouts"] == 3
    # the eval reward at its checkpoint step, which the runs table draws
    assert MetricSeries.objects.get(run=evals[1], key="reward/mean").metric_set.get(step=3).value == pytest.approx(2 / 3)
    assert out.count("created run") == 3

    again, err = _import(samples / "verl" / "generated-by-verl-0.9.1", team.project.slug)
    assert "created" not in again and again.count("updated run") == 3
    assert "36 already there" in again and "0 rollouts, 0 points" in again
    assert Rollout.objects.filter(run__project=team.project).count() == 42
    assert Run.objects.filter(project=team.project).count() == 3


def test_verl_dumps_without_tracker_get_reward_curves(samples, team):
    _import(samples / "verl" / "generated-by-verl-0.9.1" / "rollout_data", team.project.slug)
    run = Run.objects.get(project=team.project, source="verl")
    series = MetricSeries.objects.get(run=run, key="reward/mean")
    assert series.count == 3 and series.metric_set.get(step=2).value == pytest.approx(5 / 12)


def test_a_file_matching_no_format_is_refused_with_what_was_expected(tmp_path, team):
    f = tmp_path / "1.jsonl"  # a {step, ...} line with text in it: neither a verl dump nor prime-rl metrics
    f.write_text(json.dumps({"step": 1, "question": "2+2?", "answer": "4"}) + "\n")
    err = io.StringIO()
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("import", str(f), "--project", team.project.slug, stdout=io.StringIO(), stderr=err)
    assert "unknown format: a JSON object with keys ['answer', 'question', 'step']" in err.getvalue()
    assert "expected one of:" in err.getvalue() and "verl {step}.jsonl dumps" in err.getvalue()
    assert not Run.objects.filter(project=team.project).exists()


def test_a_pickle_is_refused_and_never_loaded(tmp_path, team):
    import pickle

    class Boom:
        def __reduce__(self):  # loading this would run `exit 7`: the test fails loudly if it ever is
            import os
            return (os.system, ("exit 7",))

    f = tmp_path / "dumped_data" / "global_step_1_training_input.pkl"
    f.parent.mkdir()
    f.write_bytes(pickle.dumps(Boom(), protocol=4))
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import", str(f), "--project", team.project.slug, stdout=io.StringIO(), stderr=err)
    assert "Python pickle (protocol 4)" in err.getvalue() and "never unpickles" in err.getvalue()


@pytest.mark.parametrize(("folder", "source", "expected"), [
    # (run kind, checkpoint step, rollouts, metric series) per run, train first
    # an eval run's series: reward/mean, reward/std, groups/zero_std_frac at its checkpoint step
    ("skyrl", "skyrl", [("train", None, 0, 9), ("eval", 5, 4, 3), ("eval", 10, 4, 3)]),
    ("art", "art", [("train", None, 24, 23), ("eval", 1, 4, 3), ("eval", 2, 4, 3), ("eval", 3, 4, 3)]),
    ("areal", "areal", [("train", None, 16, 2), ("eval", 2, 2, 3)]),
    ("rllm-model-gateway", "rllm", [("eval", None, 2, 0)]),
])
def test_framework_folder_counts_and_reimport(samples, team, folder, source, expected):
    out, err = _import(samples / folder, team.project.slug)
    assert not err, err
    runs = sorted(Run.objects.filter(project=team.project, source=source),
                  key=lambda r: (r.kind != "train", r.checkpoint_step or 0))
    got = [(r.kind, r.checkpoint_step, counts(r)["rollouts"], counts(r)["series"]) for r in runs]
    assert got == expected
    train = runs[0] if runs[0].kind == "train" else None
    assert all(r.parent_id == (train.pk if train else None) for r in runs if r.kind == "eval")
    before = Rollout.objects.filter(run__project=team.project).count()
    again, _ = _import(samples / folder, team.project.slug)
    assert "created" not in again and Rollout.objects.filter(run__project=team.project).count() == before
    assert Run.objects.filter(project=team.project).count() == len(expected)


def test_a_zipped_framework_folder_imports_like_the_folder(samples, team, tmp_path, do_import):
    """The upload page's path: a zip of an ART model folder with a pickle beside it."""
    import zipfile

    src = samples / "art" / "art-email-demo"
    z = tmp_path / "art.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for f in src.rglob("*"):
            if f.is_file():
                zf.write(f, f"art-email-demo/{f.relative_to(src)}")
        zf.writestr("art-email-demo/dumped_data/batch.pkl", b"\x80\x04\x95\x00")
    report = do_import(z)
    assert {r.name: r.rollouts for r in report.runs}["email-agent-001"] == 24
    assert sum(r.rollouts for r in report.runs) == 36
    [problem] = report.problems
    assert problem["file"].endswith("batch.pkl") and "never unpickles" in problem["message"]


def test_a_torch_save_file_is_refused(tmp_path, team):
    """slime's rollout_data/{id}.pt is written by torch.save: a zip around a pickle."""
    torch = pytest.importorskip("torch", reason="torch writes the file (make ml installs a CPU build)")
    f = tmp_path / "rollout_data" / "0.pt"
    f.parent.mkdir()
    torch.save({"tokens": torch.tensor([1, 2, 3]), "rewards": [0.5]}, f)
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import", str(f.parent), "--project", team.project.slug, stdout=io.StringIO(), stderr=err)
    assert "torch.save archive" in err.getvalue() and "never unpickles" in err.getvalue()


def test_skyrl_eval_only_part_is_imported_not_dropped(samples, team, tmp_path):
    import shutil

    root = tmp_path / "export"
    shutil.copytree(samples / "skyrl", root)
    shutil.copytree(root / "dumped_evals" / "global_step_10_evals", root / "dumped_evals" / "eval_only")
    out, err = _import(root, team.project.slug)
    assert not err, err
    only = Run.objects.get(project=team.project, source="skyrl", external_id="export:eval:only")
    assert only.kind == "eval" and only.checkpoint_step is None
    assert counts(only)["rollouts"] == 4 and only.summary["eval/all/avg_score"] == 0.5
    assert Run.objects.filter(project=team.project, source="skyrl").count() == 4
