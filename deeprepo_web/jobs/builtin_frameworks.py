"""Built-in job templates for RL frameworks that write rollout files: verl, SkyRL, ART (and NeMo-RL).

Each command points the framework's dump folders at the job's output folder and runs
`deeprepo watch` on it beside the trainer, filling the job's own run ($DEEPREPO_RUN_ID) as steps
are written; after the trainer exits, one last pass sends the final step and the command exits
with the trainer's status. The watcher's state lives in the output folder, so a re-run resumes.
"""

from __future__ import annotations

from typing import Any

# Around every framework command: the watcher in the background, a final pass once the files settle.
_WATCH_BEFORE = (
    "mkdir -p {output_dir} || exit 1; "
    "deeprepo watch {output_dir} --interval {watch_interval} --into-run {run_id} & W=$!; "
)
_WATCH_AFTER = (
    "; rc=$?; kill $W 2>/dev/null; wait $W 2>/dev/null; sleep 3; "
    "deeprepo watch {output_dir} --once --into-run {run_id}; exit $rc"
)
_WATCH_PARAM = {"name": "watch_interval", "type": "int", "default": 10, "min": 1, "max": 600,
                "label": "watch interval (s)", "help": "how often deeprepo watch looks for new step files"}


def _framework(slug: str, name: str, description: str, command: str, params: list[dict[str, Any]]) -> dict[str, Any]:
    description += " Needs deeprepo-client installed where the job runs (it provides `deeprepo watch`)."
    return {"slug": slug, "name": name, "kind": "train", "description": description,
            "command_template": _WATCH_BEFORE + command + _WATCH_AFTER, "params_schema": [*params, _WATCH_PARAM]}


FRAMEWORK_TEMPLATES: list[dict[str, Any]] = [
    _framework(
        "verl-ppo", "verl PPO / GRPO",
        "verl's main_ppo with Hydra overrides. Rollouts go to rollout_data/, validation generations to "
        "validation_data/ and the file tracker's metrics to <experiment>.jsonl, all in the job's output "
        "folder; deeprepo watch streams them into this run (validations become eval runs at their step).",
        "VERL_FILE_LOGGER_PATH={output_dir}/{experiment_name}.jsonl python3 -m verl.trainer.main_ppo "
        "algorithm.adv_estimator={adv_estimator} data.train_files={train_files} data.val_files={val_files} "
        "actor_rollout_ref.model.path={model} actor_rollout_ref.rollout.n={rollout_n} "
        "data.train_batch_size={train_batch_size} trainer.total_training_steps={total_steps} "
        "trainer.test_freq={test_freq} trainer.project_name={project_name} "
        "trainer.experiment_name={experiment_name} 'trainer.logger=[console,file]' "
        "trainer.rollout_data_dir={output_dir}/rollout_data trainer.validation_data_dir={output_dir}/validation_data "
        "trainer.default_local_dir={output_dir}/checkpoints {overrides}",
        [
            {"name": "adv_estimator", "type": "choice", "choices": ["grpo", "gae", "rloo", "reinforce_plus_plus"],
             "default": "grpo", "label": "advantage estimator", "help": "grpo for GRPO, gae for PPO with a critic"},
            {"name": "model", "type": "str", "required": True, "default": "Qwen/Qwen2.5-0.5B-Instruct",
             "max_length": 500},
            {"name": "train_files", "type": "str", "required": True, "default": "data/gsm8k/train.parquet",
             "max_length": 1000},
            {"name": "val_files", "type": "str", "required": True, "default": "data/gsm8k/test.parquet",
             "max_length": 1000},
            {"name": "rollout_n", "type": "int", "default": 8, "min": 1, "max": 256, "label": "rollouts per prompt"},
            {"name": "train_batch_size", "type": "int", "default": 256, "min": 1, "max": 100000},
            {"name": "total_steps", "type": "int", "default": 100, "min": 1, "max": 10000000},
            {"name": "test_freq", "type": "int", "default": 10, "min": -1, "max": 100000,
             "label": "validate every N steps"},
            {"name": "project_name", "type": "str", "default": "deeprepo", "max_length": 200},
            {"name": "experiment_name", "type": "str", "required": True, "default": "grpo", "max_length": 200},
            {"name": "overrides", "type": "str", "default": "", "max_length": 4000,
             "help": "one more Hydra override (key=value); it reaches verl as a single argument"},
        ],
    ),
    _framework(
        "skyrl", "SkyRL",
        "SkyRL's main_base entry point. Its eval dumps (dumped_evals/global_step_N_evals/) go under the job's "
        "output folder (trainer.export_path) and become eval runs linked to this run at their step.",
        "python3 -m {entry} trainer.export_path={output_dir} "
        "trainer.dump_eval_results=true trainer.policy.model.path={model} data.train_data={train_data} "
        "data.val_data={val_data} trainer.eval_interval={eval_interval} trainer.epochs={epochs} {overrides}",
        [
            {"name": "entry", "type": "str", "required": True, "default": "skyrl.train.entrypoints.main_base",
             "max_length": 300, "label": "entry module", "help": "older releases: skyrl_train.entrypoints.main_base"},
            {"name": "model", "type": "str", "required": True, "default": "Qwen/Qwen2.5-0.5B-Instruct",
             "max_length": 500},
            {"name": "train_data", "type": "str", "required": True, "default": "['data/gsm8k/train.parquet']",
             "max_length": 1000},
            {"name": "val_data", "type": "str", "required": True, "default": "['data/gsm8k/validation.parquet']",
             "max_length": 1000},
            {"name": "eval_interval", "type": "int", "default": 5, "min": 1, "max": 100000},
            {"name": "epochs", "type": "int", "default": 1, "min": 1, "max": 1000},
            {"name": "overrides", "type": "str", "default": "", "max_length": 4000,
             "help": "one more Hydra override (key=value)"},
        ],
    ),
    _framework(
        "art", "ART (OpenPipe)",
        "An ART training script. ART_BASE_PATH points art.LocalBackend / art.Model at the job's output "
        "folder; trajectories/{split}/NNNN.parquet and history.jsonl stream into this run.",
        "ART_BASE_PATH={output_dir} python3 {script} {script_args}",
        [
            {"name": "script", "type": "str", "required": True, "default": "train.py", "max_length": 500,
             "help": "the training script; it should pass base_path=os.environ['ART_BASE_PATH'] to its backend"},
            {"name": "script_args", "type": "str", "default": "", "max_length": 4000,
             "help": "one argument for the script (a single word when rendered)"},
        ],
    ),
]
