"""The RL framework job templates render a command that a shell accepts, with the dump folders in
the job's output folder and deeprepo watch filling the job's run."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from deeprepo_web.jobs.builtin import BUILTIN_TEMPLATES
from deeprepo_web.jobs.params import render_command, validate_params, validate_template

RESERVED = {"output_dir": "/scratch/jobs/j 1/out", "job_id": "job_abc", "run_id": "run_xyz"}


def _render(slug: str, **values) -> str:
    spec = next(t for t in BUILTIN_TEMPLATES if t["slug"] == slug)
    schema = validate_template(spec["command_template"], spec["params_schema"])
    return render_command(spec["command_template"], schema, validate_params(schema, values), RESERVED)


def _sh_accepts(command: str) -> None:
    done = subprocess.run(["/bin/sh", "-n", "-c", command], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("slug", ["verl-ppo", "skyrl", "art"])
def test_watch_runs_beside_the_trainer_and_fills_the_jobs_run(slug):
    cmd = _render(slug)
    _sh_accepts(cmd)
    out = shlex.quote(RESERVED["output_dir"])
    assert cmd.startswith(f"mkdir -p {out} || exit 1; deeprepo watch {out} --interval 10 --into-run run_xyz & W=$!; ")
    assert cmd.endswith(f"deeprepo watch {out} --once --into-run run_xyz; exit $rc")


def test_verl_points_its_dumps_and_tracker_at_the_output_folder():
    cmd = _render("verl-ppo", experiment_name="qwen grpo", rollout_n=16, overrides="actor_rollout_ref.actor.kl_loss_coef=0.001")
    _sh_accepts(cmd)
    out = shlex.quote(RESERVED["output_dir"])
    words = shlex.split(cmd.split(" & W=$!; ", 1)[1].split("; rc=$?", 1)[0])
    assert words[0] == f"VERL_FILE_LOGGER_PATH={RESERVED['output_dir']}/qwen grpo.jsonl"
    assert words[1:4] == ["python3", "-m", "verl.trainer.main_ppo"]
    assert f"trainer.rollout_data_dir={RESERVED['output_dir']}/rollout_data" in words
    assert f"trainer.validation_data_dir={RESERVED['output_dir']}/validation_data" in words
    assert "algorithm.adv_estimator=grpo" in words and "actor_rollout_ref.rollout.n=16" in words
    assert "trainer.logger=[console,file]" in words and words[-1] == "actor_rollout_ref.actor.kl_loss_coef=0.001"
    assert f"{out}/rollout_data" in cmd


def test_a_hostile_override_stays_one_argument():
    cmd = _render("verl-ppo", overrides="x=1; touch /tmp/pwned-i16 $(id)")
    _sh_accepts(cmd)
    words = shlex.split(cmd.split(" & W=$!; ", 1)[1].split("; rc=$?", 1)[0])
    assert words[-1] == "x=1; touch /tmp/pwned-i16 $(id)"


def test_skyrl_and_art_render_their_output_paths():
    sky = _render("skyrl", eval_interval=3)
    assert f"trainer.export_path={shlex.quote(RESERVED['output_dir'])}" in sky
    assert "python3 -m skyrl.train.entrypoints.main_base" in sky and "trainer.eval_interval=3" in sky
    art = _render("art", script="train_email_agent.py")
    assert f"ART_BASE_PATH={shlex.quote(RESERVED['output_dir'])} python3 train_email_agent.py" in art
