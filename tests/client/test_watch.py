"""`deeprepo watch DIR` against a real server: rows stream as a trainer writes them, a restart resumes,
and nothing is ever doubled."""

from __future__ import annotations

import json
import shutil
import socket

import pytest

from deeprepo_client.cli import main as cli_main
from deeprepo_web.runs.models import Metric, MetricSeries, Rollout, Run, ToolCall
from tests.importers.conftest import vf_row

pytestmark = pytest.mark.django_db(transaction=True)


def _watch(url, key, folder, *extra):
    return cli_main(["--url", url, "--api-key", key, "watch", str(folder), "--project", "demo", "--once", *extra])


def _append(path, text):
    with open(path, "a") as f:
        f.write(text)


def test_verifiers_results_stream_as_written_and_resume_after_restart(live_server, team, tmp_path, capsys):
    out = tmp_path / "outputs" / "evals" / "toy--m" / "abc123"
    out.mkdir(parents=True)
    (out / "metadata.json").write_text(json.dumps({"env_id": "toy", "model": "m", "num_examples": 5}))
    rows = [json.dumps(vf_row(i, i % 5)) for i in range(10)]
    # three whole lines and half of the fourth: vf-eval -s is mid-write
    (out / "results.jsonl").write_text("\n".join(rows[:3]) + "\n" + rows[3][:70])
    assert _watch(live_server.url, team.key, out) == 0
    run = Run.objects.get(project=team.project)
    assert run.status == "running" and run.source == "verifiers" and run.kind == "eval"
    assert Rollout.objects.filter(run=run).count() == 3
    assert "truncated" not in capsys.readouterr().err  # a line being written is not a problem

    _append(out / "results.jsonl", rows[3][70:] + "\n" + "\n".join(rows[4:7]) + "\n")
    assert _watch(live_server.url, team.key, out) == 0
    assert Rollout.objects.filter(run=run).count() == 7
    assert "+4 rollouts" in capsys.readouterr().out

    # a restart (new process, same state folder) sends only what is new
    _append(out / "results.jsonl", "\n".join(rows[7:]) + "\n")
    assert _watch(live_server.url, team.key, out) == 0
    assert "+3 rollouts" in capsys.readouterr().out
    assert _watch(live_server.url, team.key, out) == 0
    assert "+0 rollouts, +0 points" in capsys.readouterr().out
    assert Run.objects.count() == 1 and Rollout.objects.count() == 10 and ToolCall.objects.count() == 10

    # even with the state lost, the server's idempotency keeps the counts
    shutil.rmtree(out / ".deeprepo-watch")
    assert _watch(live_server.url, team.key, out) == 0
    assert Run.objects.count() == 1 and Rollout.objects.count() == 10 and ToolCall.objects.count() == 10


def test_prime_rl_metrics_and_rollouts(live_server, team, tmp_path):
    out = tmp_path / "prime-run"
    (out / "rollouts" / "step_1" / "train").mkdir(parents=True)
    metrics = out / "metrics.jsonl"
    metrics.write_text("".join(json.dumps({"step": s, "time": 1.7e9 + s, "loss/mean": 1 / (s + 1),
                                           "optim/lr": 1e-5}) + "\n" for s in range(3)))

    def episode(step, ex, i, score):
        return json.dumps({
            "nodes": [{"id": 0, "message": {"role": "user", "content": f"task {ex}"}},
                      {"id": 1, "parent_id": 0, "message": {"role": "assistant", "content": f"answer {i}"}}],
            "calls": [{"usage": {"input_tokens": 10, "output_tokens": 5}}],
            "rewards": {"correct": {"score": score, "weight": 1.0}},
            "group": {"id": ex, "index": i}, "run": {"type": "train", "step": step}}) + "\n"

    (out / "rollouts" / "step_1" / "train" / "traces.jsonl").write_text(episode(1, "e1", 0, 1.0) + episode(1, "e1", 1, 0.0))
    assert _watch(live_server.url, team.key, out) == 0
    run = Run.objects.get(source="prime-rl")
    assert MetricSeries.objects.get(run=run, key="loss/mean").count == 3
    assert Rollout.objects.filter(run=run).count() == 2

    _append(metrics, "".join(json.dumps({"step": s, "loss/mean": 0.1, "optim/lr": 1e-5}) + "\n" for s in range(3, 5)))
    (out / "rollouts" / "step_2" / "train").mkdir(parents=True)
    (out / "rollouts" / "step_2" / "train" / "traces.jsonl").write_text(episode(2, "e1", 0, 1.0))
    assert _watch(live_server.url, team.key, out) == 0
    assert MetricSeries.objects.get(run=run, key="loss/mean").count == 5
    assert Metric.objects.filter(series__run=run).count() == 10
    assert sorted(Rollout.objects.filter(run=run).values_list("step", flat=True)) == [1, 1, 2]


def test_trl_checkpoints_and_completions(live_server, team, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path / "grpo-out"

    def checkpoint(step):
        d = out / f"checkpoint-{step}"
        d.mkdir(parents=True)
        history = [{"step": s, "loss": 0.5 / s, "reward": s / 10, "rewards/acc/mean": s / 10} for s in range(1, step + 1)]
        (d / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": history}))

    def completions(step):
        (out / "completions").mkdir(parents=True, exist_ok=True)
        table = pa.table({"step": [step] * 4, "prompt": ["p1", "p1", "p2", "p2"],
                          "completion": [f"c{step}-{i}" for i in range(4)], "acc": [1.0, 0.0, 1.0, 1.0],
                          "advantage": [0.5, -0.5, 0.0, 0.0]})
        pq.write_table(table, out / "completions" / f"completions_{step:05d}.parquet")

    checkpoint(2)
    completions(1)
    completions(2)
    assert _watch(live_server.url, team.key, out) == 0
    run = Run.objects.get(source="trl")
    assert MetricSeries.objects.get(run=run, key="loss").count == 2 and Rollout.objects.filter(run=run).count() == 8
    checkpoint(4)  # the newest checkpoint holds the whole history so far
    completions(3)
    assert _watch(live_server.url, team.key, out) == 0
    assert MetricSeries.objects.get(run=run, key="loss").count == 4
    assert Rollout.objects.filter(run=run).count() == 12
    assert Run.objects.count() == 1
    assert Run.objects.get(pk=run.pk).summary.get("global_step") == 4


def test_server_away_keeps_rows_spooled_until_it_is_back(live_server, team, tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    out = tmp_path / "eval"
    out.mkdir()
    (out / "results.jsonl").write_text("".join(json.dumps(vf_row(i, i)) + "\n" for i in range(4)))
    assert _watch(dead, team.key, out) == 1
    assert "server away" in capsys.readouterr().err and Rollout.objects.count() == 0
    assert _watch(live_server.url, team.key, out) == 0
    assert Rollout.objects.count() == 4 and Run.objects.count() == 1


def test_wrong_project_is_refused_clearly(live_server, team, tmp_path, capsys):
    out = tmp_path / "eval"
    out.mkdir()
    (out / "results.jsonl").write_text(json.dumps(vf_row(0, 0)) + "\n")
    code = cli_main(["--url", live_server.url, "--api-key", team.key, "watch", str(out), "--project", "other", "--once"])
    assert code == 1 and "is not the project of this API key" in capsys.readouterr().err
    assert Run.objects.count() == 0


def test_empty_folder_waits_and_bad_arguments(live_server, team, tmp_path, capsys):
    assert _watch(live_server.url, team.key, tmp_path) == 0
    assert "nothing yet" in capsys.readouterr().out
    assert _watch(live_server.url, team.key, tmp_path / "missing") == 2
    assert cli_main(["--api-key", team.key, "watch", str(tmp_path), "--interval", "0"]) == 2


def _aged(path, seconds=60):
    import os
    import time

    t = time.time() - seconds
    os.utime(path, (t, t))


def test_verl_output_folder_step_files_as_they_come(live_server, team, tmp_path, samples, capsys):
    """verl writes rollout_data/{step}.jsonl at the end of each step and validation_data/{step}.jsonl
    after each validation: new files are sent once whole, the eval run links to the train run."""
    src = samples / "verl" / "generated-by-verl-0.9.1"
    out = tmp_path / "verl-run"
    (out / "rollout_data").mkdir(parents=True)
    (out / "validation_data").mkdir()
    shutil.copy(src / "validation_data" / "0.jsonl", out / "validation_data" / "0.jsonl")
    shutil.copy(src / "rollout_data" / "1.jsonl", out / "rollout_data" / "1.jsonl")
    step2 = (src / "rollout_data" / "2.jsonl").read_text()
    (out / "rollout_data" / "2.jsonl").write_text(step2[:3000])  # verl is mid-write
    for f in out.rglob("*.jsonl"):
        _aged(f)
    assert _watch(live_server.url, team.key, out) == 0
    train = Run.objects.get(project=team.project, source="verl", kind="train")
    val0 = Run.objects.get(project=team.project, source="verl", kind="eval")
    assert val0.parent_id == train.pk and val0.checkpoint_step == 0
    assert Rollout.objects.filter(run=train).count() == 12 and Rollout.objects.filter(run=val0).count() == 3
    assert MetricSeries.objects.get(run=train, key="reward/mean").count == 1  # no tracker: from the dump
    assert "truncated" not in capsys.readouterr().err

    (out / "rollout_data" / "2.jsonl").write_text(step2)
    _aged(out / "rollout_data" / "2.jsonl")
    assert _watch(live_server.url, team.key, out) == 0
    assert "+12 rollouts" in capsys.readouterr().out
    assert sorted(set(Rollout.objects.filter(run=train).values_list("step", flat=True))) == [1, 2]
    state = json.loads((out / ".deeprepo-watch" / "state.json").read_text())
    assert len(state["files"]) == 3  # sent whole: later passes skip them while they stay unchanged

    # a restart sends nothing again; a new step and a new validation come through
    assert _watch(live_server.url, team.key, out) == 0
    assert "+0 rollouts, +0 points" in capsys.readouterr().out
    shutil.copy(src / "rollout_data" / "3.jsonl", out / "rollout_data" / "3.jsonl")
    shutil.copy(src / "validation_data" / "3.jsonl", out / "validation_data" / "3.jsonl")
    for f in out.rglob("3.jsonl"):
        _aged(f)
    assert _watch(live_server.url, team.key, out) == 0
    assert Rollout.objects.filter(run=train).count() == 36
    val3 = Run.objects.get(project=team.project, source="verl", kind="eval", checkpoint_step=3)
    assert val3.parent_id == train.pk and Rollout.objects.filter(run=val3).count() == 3
    assert Run.objects.filter(project=team.project).count() == 3


def test_into_run_fills_a_jobs_run(live_server, team, tmp_path, samples):
    """A job's command runs `deeprepo watch OUT --into-run $DEEPREPO_RUN_ID`: the folder's train run is
    the job's run, and validation runs link to it."""
    from deeprepo_web.runs.services import run_create

    job_run, _ = run_create(project=team.project, name="verl job", source="job", external_id="job-1", kind="train")
    out = tmp_path / "job-out"
    shutil.copytree(samples / "verl" / "generated-by-verl-0.9.1", out)
    for f in out.rglob("*.jsonl"):
        _aged(f)
    assert _watch(live_server.url, team.key, out, "--into-run", job_run.public_id) == 0
    assert Rollout.objects.filter(run=job_run).count() == 36
    assert MetricSeries.objects.get(run=job_run, key="critic/score/mean").count == 3
    evals = Run.objects.filter(project=team.project, kind="eval")
    assert sorted(e.checkpoint_step for e in evals) == [0, 3] and {e.parent_id for e in evals} == {job_run.pk}
    assert Run.objects.filter(project=team.project).count() == 3


@pytest.mark.parametrize(("folder", "source", "rollouts", "runs"), [
    ("skyrl", "skyrl", 8, 3), ("art", "art", 36, 4), ("areal", "areal", 18, 2), ("rllm-model-gateway", "rllm", 2, 1),
])
def test_framework_folders_watched_once_then_nothing_new(live_server, team, tmp_path, samples, capsys,
                                                         folder, source, rollouts, runs):
    out = tmp_path / folder
    shutil.copytree(samples / folder, out)
    for f in out.rglob("*"):
        if f.is_file():
            _aged(f)
    assert _watch(live_server.url, team.key, out) == 0
    assert Rollout.objects.filter(run__source=source).count() == rollouts
    assert Run.objects.filter(project=team.project, source=source).count() == runs
    # the files sent whole are remembered: the next pass skips them while they stay unchanged
    assert json.loads((out / ".deeprepo-watch" / "state.json").read_text())["files"]
    capsys.readouterr()
    assert _watch(live_server.url, team.key, out) == 0
    assert "+0 rollouts, +0 points" in capsys.readouterr().out
    assert Rollout.objects.filter(run__source=source).count() == rollouts
