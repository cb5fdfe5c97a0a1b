"""Every part of a framework's folder is read or reported: nothing is skipped without a word (issue 25, item 1)."""

from __future__ import annotations

import shutil

from .conftest import run_parse


def _skyrl_with_eval_only(samples, tmp_path):
    root = tmp_path / "export"
    shutil.copytree(samples / "skyrl", root)
    # SkyRL's eval-only entry point dumps beside the training evals, in `eval_only/`
    shutil.copytree(root / "dumped_evals" / "global_step_5_evals", root / "dumped_evals" / "eval_only")
    return root


def test_skyrl_eval_only_part_becomes_an_eval_run_with_its_aggregate(samples, tmp_path):
    p = run_parse(_skyrl_with_eval_only(samples, tmp_path))
    assert not p.problems
    [only] = [r for r in p.runs if r.ref == "eval/only"]
    assert only.run["kind"] == "eval" and only.run["name"] == "export · eval only"
    assert only.run["summary"]["eval/all/avg_score"] == 0.5 and only.run["summary"]["rollouts"] == 4
    assert sum(1 for e in p.events if getattr(e, "ref", "") == "eval/only" for _ in getattr(e, "rollouts", [])) == 4
    # the training evals are still there, linked to the train run at their step
    assert sorted(r.run.get("checkpoint_step") for r in p.runs if r.run["kind"] == "eval" and r.ref != "eval/only") == [5, 10]


def test_skyrl_only_eval_only_is_still_a_skyrl_export(samples, tmp_path):
    root = tmp_path / "export"
    shutil.copytree(samples / "skyrl" / "dumped_evals" / "global_step_5_evals", root / "dumped_evals" / "eval_only")
    p = run_parse(root)
    assert not p.problems
    assert [r.ref for r in p.runs] == ["eval/only"]  # no empty train run


def test_skyrl_unknown_parts_are_reported(samples, tmp_path):
    root = tmp_path / "export"
    shutil.copytree(samples / "skyrl", root)
    (root / "dumped_evals" / "notes.json").write_text("{}")
    (root / "dumped_evals" / "global_step_5_evals" / "extra.csv").write_text("a,b\n")
    p = run_parse(root)
    named = sorted((pr.file.rsplit("/", 1)[-1], pr.message) for pr in p.problems)
    assert [n for n, _ in named] == ["extra.csv", "notes.json"]
    assert all("not read" in m for _, m in named)


def test_verl_files_beside_the_dumps_are_reported(samples, tmp_path):
    src = samples / "verl" / "generated-by-verl-0.9.1"
    root = tmp_path / "out"
    shutil.copytree(src, root)
    (root / "rollout_data" / "summary.json").write_text("{}")
    p = run_parse(root)
    assert [(pr.file.rsplit("/", 1)[-1], "not read" in pr.message) for pr in p.problems] == [("summary.json", True)]


def test_art_and_areal_files_outside_their_layout_are_reported(samples, tmp_path):
    art = tmp_path / "art"
    shutil.copytree(samples / "art" / "art-email-demo" / "models" / "email-agent-001", art)
    (art / "trajectories" / "val" / "0004.jsonl").write_text("{}\n")  # older ART wrote JSONL
    p = run_parse(art)
    assert [pr.file.rsplit("/", 1)[-1] for pr in p.problems] == ["0004.jsonl"]
    # state.json is read: ART's cumulative counters go to the train run's summary
    assert p.run["summary"]["data/cum/num_trajectories"] == 36.0

    areal = tmp_path / "trial0"
    shutil.copytree(samples / "areal" / "logs" / "root" / "gsm8k-grpo" / "trial0", areal)
    (areal / "rollout" / "stats.json").write_text("{}")
    p = run_parse(areal)
    assert [pr.file.rsplit("/", 1)[-1] for pr in p.problems] == ["stats.json"]


def test_a_folder_of_several_runs_reports_files_no_format_reads(samples, tmp_path):
    shutil.copytree(samples / "skyrl", tmp_path / "a")
    shutil.copytree(samples / "art" / "art-email-demo" / "models" / "email-agent-001", tmp_path / "b")
    (tmp_path / "readme.jsonl").write_text('{"hello": 1}\n')
    p = run_parse(tmp_path)
    assert len({r.run["source"] for r in p.runs}) == 2
    assert [pr.file.rsplit("/", 1)[-1] for pr in p.problems] == ["readme.jsonl"]
    assert "no format" in p.problems[0].message
