"""The formats deeprepo ships, registered in the order their labels are listed to people.

Priorities per way of recognising (lower is tried first; gaps leave room for plugins):
  head    10 wandb · 15 tensorboard · 20 trackio · 30 rllm_gateway · 40 pickle · 50 inspect_eval
  keys    100 verl · 110 skyrl · 120 areal · 130 art · 140 rllm_gateway · 150 trl · 160 swe_agent_traj
          · 170 swebench_summary · 180 swebench_reports · 190 inspect_json · 200 openhands
          · 210 swe_agent_preds · 220 prime_rl (message graphs) · 230 prime_hosted · 240 verifiers
          · 250 prime_rl (metrics lines: the catch-all)
  folder  100 verl · 110 skyrl · 120 art · 130 areal · 140 rllm_gateway · 150 wandb · 160 mlflow
          · 170 trackio · 180 prime_hosted · 190 verifiers · 200 trl · 210 prime_rl · 220 swe_agent_traj
          · 230 swebench_reports · 240 wandb_export · 245 tensorboard
"""

from __future__ import annotations

from pathlib import Path

from . import (
    _frameworks,
    areal,
    art,
    inspect,
    mlflow,
    openhands,
    prime_hosted,
    prime_rl,
    rllm_gateway,
    skyrl,
    swe_agent,
    swebench,
    tensorboard,
    trackio,
    trl,
    verifiers,
    verl,
    wandb,
    wandb_export,
)
from ._detect import detect_file
from .registry import Format, Sniff, register


def _results_format(path: Path, names: set[str]) -> str | None:
    """A verifiers / Prime hosted folder: what its results.jsonl (or metadata.json) says."""
    if "results.jsonl" not in names:
        return None
    if "metadata.json" in names:
        d = detect_file(path / "metadata.json")
        if d and d.format == "prime_hosted":
            return "prime_hosted"
    d = detect_file(path / "results.jsonl")
    return d.format if d and d.format in ("prime_hosted", "verifiers") else None


# --- keys of a JSON document or line -----------------------------------------------------------

def _prime_hosted_keys(k1: set[str], k2: set[str]) -> bool:
    if "prompt" in k1 and "completion" in k1:
        return "problem_id" in k1  # a rollout line; without problem_id it is verifiers'
    if "run" in k1 and ({"base_model", "rollouts_per_example", "max_steps"} & k2):
        return True  # metadata.json of a hosted export
    return k1 == {"metrics"} or ("samples" in k1 and "total_pages" in k1)  # metrics_raw / rollouts_raw


def _verifiers_keys(k1: set[str], k2: set[str]) -> bool:
    if "prompt" in k1 and "completion" in k1:
        return True
    # metadata.json of an eval
    return "model" in k1 and bool({"env_id", "env"} & k1) and bool({"num_examples", "rollouts_per_example"} & k1)


def _prime_rl_metrics_line(k1: set[str], k2: set[str]) -> bool:
    """metrics.jsonl: {step, time, scalars...}; tried after every other format."""
    return "step" in k1 and len(k1) >= 2 and not ({"prompt", "completion", "messages"} & k1)


def _prime_rl_folder(path: Path, names: set[str]) -> bool:
    return "metrics.jsonl" in names or (
        (path / "rollouts").is_dir() and any((path / "rollouts").glob("**/traces.jsonl")))


def _trl_folder(path: Path, names: set[str]) -> bool:
    completions = path / "completions"
    return "trainer_state.json" in names or any(
        n.startswith("checkpoint-") and (path / n / "trainer_state.json").exists() for n in names) or (
        completions.is_dir() and any(completions.glob("completions_*.parquet")))


def _trackio_folder(path: Path, names: set[str]) -> bool:
    return any(n.endswith((".db", "_configs.parquet")) for n in names) and trackio.is_project(path)


BUILTIN: tuple[Format, ...] = (
    Format("verifiers", "verifiers results.jsonl + metadata.json", verifiers.parse, (
        Sniff(240, keys=_verifiers_keys),
        Sniff(190, folder=lambda p, n: _results_format(p, n) == "verifiers"))),
    Format("prime_hosted", "a Prime hosted export", prime_hosted.parse, (
        Sniff(230, keys=_prime_hosted_keys),
        Sniff(180, folder=lambda p, n: bool({"metrics_raw.json", "rollouts_raw.json"} & n)
              or _results_format(p, n) == "prime_hosted"))),
    Format("trl", "TRL trainer_state.json", trl.parse, (
        Sniff(150, keys=lambda k1, k2: "log_history" in k1),
        Sniff(200, folder=_trl_folder))),
    Format("inspect_eval", "an Inspect .eval log", inspect.parse, (Sniff(50, head=inspect.is_eval_zip),)),
    Format("inspect_json", "an Inspect .json log", inspect.parse, (Sniff(190, keys=inspect.is_json_log),)),
    Format("swe_agent_traj", "SWE-agent .traj", swe_agent.parse_traj, (
        Sniff(160, keys=lambda k1, k2: "trajectory" in k1 and bool({"info", "history"} & k1)),
        Sniff(220, folder=lambda p, n: any(x.endswith(".traj") for x in n)))),
    Format("openhands", "OpenHands output.jsonl", openhands.parse, (
        Sniff(200, keys=lambda k1, k2: "instance_id" in k1 and "history" in k1),)),
    Format("swe_agent_preds", "SWE-agent predictions .jsonl", swe_agent.parse_preds, (
        Sniff(210, keys=lambda k1, k2: "instance_id" in k1 and "model_patch" in k1),)),
    Format("swebench_summary", "a SWE-bench summary", swebench.parse_summary, (
        Sniff(170, keys=lambda k1, k2: swebench.looks_like_summary(k1)),)),
    Format("swebench_reports", "SWE-bench reports", swebench.parse_reports, (
        Sniff(180, keys=lambda k1, k2: "resolved" in k2
              and bool({"tests_status", "patch_exists", "patch_is_None"} & k2)),
        Sniff(230, folder=lambda p, n: "report.json" in n))),
    Format("prime_rl", "prime-rl metrics.jsonl or traces.jsonl", prime_rl.parse, (
        Sniff(220, keys=lambda k1, k2: "nodes" in k1 and bool({"calls", "rewards", "group", "run"} & k1)),
        Sniff(250, keys=_prime_rl_metrics_line),
        Sniff(210, folder=_prime_rl_folder)),
        # {step, ...} with text or objects in it is no metrics.jsonl: never guess
        confirm_line=lambda p: _frameworks.scalar_row(_frameworks.first_object(p))),
    Format("verl", "verl {step}.jsonl dumps or its file-tracker .jsonl", verl.parse, (
        Sniff(100, keys=lambda k1, k2: verl.is_dump_line(k1) or verl.is_tracker_line(k1)),
        Sniff(100, folder=lambda p, n: verl.looks_like_output_dir(p)))),
    Format("skyrl", "SkyRL dumped_evals", skyrl.parse, (
        Sniff(110, keys=lambda k1, k2: skyrl.is_sample_line(k1)),
        Sniff(110, folder=lambda p, n: skyrl.looks_like_export(p)))),
    Format("art", "an ART model folder", art.parse, (
        Sniff(130, keys=lambda k1, k2: art.is_history_line(k1)),
        Sniff(120, folder=lambda p, n: art.looks_like_model_dir(p)))),
    Format("areal", "AReaL rollout dumps", areal.parse, (
        Sniff(120, keys=lambda k1, k2: areal.is_line(k1)),
        Sniff(130, folder=lambda p, n: areal.looks_like_trial(p)))),
    Format("rllm_gateway", "rLLM gateway traces (SQLite or session JSON)", rllm_gateway.parse, (
        Sniff(30, head=_frameworks.rllm_gateway_head),
        Sniff(140, keys=lambda k1, k2: rllm_gateway.is_trace(k1)),
        Sniff(140, folder=lambda p, n: rllm_gateway.looks_like_folder(p)))),
    Format("wandb", "a W&B run folder or .wandb log", wandb.parse, (
        Sniff(10, head=lambda p, h: wandb.is_wandb_log(h)),
        Sniff(150, folder=wandb.is_run_or_runs))),
    Format("mlflow", "an MLflow export or traces folder", mlflow.parse, (Sniff(160, folder=mlflow.is_export),)),
    Format("trackio", "a Trackio project (.db)", trackio.parse, (
        Sniff(20, head=lambda p, h: h.startswith(trackio.SQLITE) and trackio.is_project(p)),
        Sniff(170, folder=_trackio_folder))),
    Format("wandb_export", "a W&B cloud download (history Parquet, tables)", wandb_export.parse, (
        Sniff(240, folder=wandb_export.is_export),)),
    Format("tensorboard", "TensorBoard event files (a logdir, a run folder or one file)", tensorboard.parse, (
        Sniff(15, head=lambda p, h: tensorboard.is_event_file(h)),
        Sniff(245, folder=tensorboard.is_run_dir))),
    Format("pickle", "", _frameworks.refuse_pickle, (Sniff(40, head=_frameworks.pickle_head),)),
)


def register_builtin() -> None:
    for fmt in BUILTIN:
        register(fmt)

