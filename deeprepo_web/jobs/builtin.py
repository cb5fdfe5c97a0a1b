"""The templates every project starts with. Synced into the database by `builtin_templates_ensure`."""

from __future__ import annotations

from typing import Any

from deeprepo_web.jobs.builtin_frameworks import FRAMEWORK_TEMPLATES

BUILTIN_TEMPLATES: list[dict[str, Any]] = [
    {
        "slug": "demo-grpo",
        "name": "Demo GRPO",
        "kind": "train",
        "description": (
            "A real, small GRPO trainer (numpy) on a toy repo-audit environment. Runs on a CPU in "
            "about two minutes with the default pause between steps, logging rewards, rollouts and "
            "evals into the job's run. Needs this repository as the cluster's workdir."
        ),
        "command_template": (
            "python -m workers.demo_grpo --steps {steps} --step-sleep {step_sleep} --seed {seed} "
            "--lr {lr} --examples-per-step {examples_per_step} --rollouts-per-example {rollouts_per_example} "
            "{no_evals} --checkpoint-every {checkpoint_every}"
        ),
        "params_schema": [
            {"name": "steps", "type": "int", "default": 40, "min": 1, "max": 10000, "help": "training steps"},
            {"name": "step_sleep", "type": "float", "default": 3.0, "min": 0, "max": 60,
             "label": "pause per step (s)", "help": "slows the demo down so the curves grow live"},
            {"name": "seed", "type": "int", "default": 0, "min": 0, "max": 2**31 - 1},
            {"name": "lr", "type": "float", "default": 0.05, "min": 1e-6, "max": 10, "label": "learning rate"},
            {"name": "examples_per_step", "type": "int", "default": 8, "min": 1, "max": 256},
            {"name": "rollouts_per_example", "type": "int", "default": 8, "min": 2, "max": 64,
             "help": "GRPO group size"},
            {"name": "no_evals", "type": "bool", "flag": "--no-evals", "default": False,
             "label": "skip before/after evals"},
            {"name": "checkpoint_every", "type": "int", "default": 0, "min": 0, "max": 10000,
             "label": "checkpoint every (steps)",
             "help": "save the policy at step 0, every N steps and at the end, logged as checkpoint artifacts "
                     "(0 = none); a checkpoint-eval rule on the run evaluates each one"},
        ],
    },
    {
        "slug": "demo-grpo-eval",
        "name": "Demo GRPO checkpoint eval",
        "kind": "eval",
        "description": (
            "Evaluates one checkpoint of the demo GRPO trainer on its fixed eval set, into the job's run. "
            "Launched by a checkpoint-eval rule with the checkpoint's path and step."
        ),
        "command_template": (
            "python -m workers.demo_grpo --eval-checkpoint {checkpoint} --checkpoint-step {step} "
            "--eval-examples {eval_examples} --eval-rollouts {eval_rollouts}"
        ),
        "params_schema": [
            {"name": "checkpoint", "type": "str", "required": True, "max_length": 1000,
             "help": "path of the checkpoint (.npz) on the cluster"},
            {"name": "step", "type": "int", "default": 0, "min": 0, "max": 10**9, "help": "the checkpoint's step"},
            {"name": "eval_examples", "type": "int", "default": 6, "min": 1, "max": 200},
            {"name": "eval_rollouts", "type": "int", "default": 4, "min": 1, "max": 64},
        ],
    },
    {
        "slug": "verifiers-eval",
        "name": "verifiers eval",
        "kind": "eval",
        "import_outputs": True,
        "description": (
            "vf-eval on a verifiers environment. Results are saved (-s) under the job's output folder "
            "and imported into the job's run when it ends."
        ),
        "command_template": (
            "mkdir -p {output_dir} && cd {output_dir} && "
            "vf-eval {env} -m {model} -n {num_examples} -r {rollouts_per_example} -s"
        ),
        "params_schema": [
            {"name": "env", "type": "str", "required": True, "label": "environment",
             "help": "verifiers environment id, e.g. wordle", "max_length": 200},
            {"name": "model", "type": "str", "required": True, "default": "gpt-4.1-mini", "max_length": 300},
            {"name": "num_examples", "type": "int", "default": 20, "min": 1, "max": 100000, "label": "examples (-n)"},
            {"name": "rollouts_per_example", "type": "int", "default": 3, "min": 1, "max": 256,
             "label": "rollouts per example (-r)"},
        ],
    },
    {
        "slug": "trl-grpo",
        "name": "TRL GRPO",
        "kind": "train",
        "description": (
            "A TRL GRPOTrainer script under accelerate. The script adds "
            "deeprepo_client.integrations.trl.DeeprepoCallback() to the trainer's callbacks; the job's "
            "environment (DEEPREPO_URL, DEEPREPO_API_KEY, DEEPREPO_RUN_ID) points it at this run."
        ),
        "command_template": (
            "DEEPREPO_TRL_CALLBACK=deeprepo_client.integrations.trl.DeeprepoCallback "
            "accelerate launch --num_processes {num_processes} {script} --model_name_or_path {model} "
            "--dataset_name {dataset} --output_dir {output_dir} --learning_rate {learning_rate} "
            "--num_generations {num_generations} --max_steps {max_steps}"
        ),
        "params_schema": [
            {"name": "script", "type": "str", "required": True, "default": "train_grpo.py", "max_length": 500,
             "help": "path of the training script on the cluster (relative to the cluster's workdir)"},
            {"name": "model", "type": "str", "required": True, "default": "Qwen/Qwen2.5-0.5B-Instruct",
             "max_length": 300},
            {"name": "dataset", "type": "str", "required": True, "default": "trl-lib/tldr", "max_length": 300},
            {"name": "num_processes", "type": "int", "default": 1, "min": 1, "max": 64},
            {"name": "learning_rate", "type": "float", "default": 1e-6, "min": 0, "max": 1},
            {"name": "num_generations", "type": "int", "default": 8, "min": 2, "max": 256},
            {"name": "max_steps", "type": "int", "default": 500, "min": 1, "max": 1000000},
        ],
    },
    {
        "slug": "prime-rl",
        "name": "prime-rl",
        "kind": "train",
        "description": "prime-rl's `rl` entry point with a TOML config, run from a prime-rl checkout.",
        "command_template": "cd {checkout} && uv run rl @ {config} --output-dir {output_dir}",
        "params_schema": [
            {"name": "checkout", "type": "str", "required": True, "default": "prime-rl", "max_length": 500,
             "help": "prime-rl checkout on the cluster"},
            {"name": "config", "type": "str", "required": True, "default": "configs/reverse_text/rl/train.toml",
             "max_length": 500, "help": "TOML config, relative to the checkout"},
        ],
    },
    *FRAMEWORK_TEMPLATES,
    {
        "slug": "custom",
        "name": "Custom command",
        "kind": "train",
        "description": (
            "Any shell command, run with sh -c in the cluster's workdir. It receives DEEPREPO_URL, "
            "DEEPREPO_API_KEY and DEEPREPO_RUN_ID, so deeprepo_client.init() logs into the job's run."
        ),
        "command_template": "sh -c {command}",
        "params_schema": [
            {"name": "command", "type": "text", "required": True, "max_length": 20000,
             "help": "shell command line (this one is meant for the shell; template parameters are not)"},
        ],
    },
]
