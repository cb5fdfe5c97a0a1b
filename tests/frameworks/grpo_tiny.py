"""TRL's real GRPOTrainer on CPU with a tiny model and tokenizer built here (no downloads), logging
through whatever `--report-to` names: tensorboard, wandb or mlflow, configured by the environment
(TENSORBOARD_LOGGING_DIR, WANDB_BASE_URL / WANDB_API_KEY, MLFLOW_TRACKING_URI) exactly as a user's
trainer would be. Run as a script in a subprocess:

    PYTHONPATH=. python tests/frameworks/grpo_tiny.py --report-to tensorboard --output-dir OUT --steps 6 \
        [--hold-at 3 --gate FILE]

`--hold-at K --gate FILE` stops after step K's log row until FILE exists, so a test can open the run
page while the trainer is still running. Each log row is also appended to OUT/log_rows.jsonl so
the test can compare what the tracker stored with what the trainer logged.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tests.frameworks.gate import hold

PROMPTS = ["2+2=", "3+5=", "1+6=", "4+4="]
VOCAB = list("0123456789+= abcdefghij")


def tiny_tokenizer() -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1, **{ch: i + 2 for i, ch in enumerate(VOCAB)}}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    core.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="<eos>",
                                   padding_side="left")


def tiny_model(tokenizer: Any) -> Any:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=64, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id,
                        pad_token_id=tokenizer.pad_token_id)
    return GPT2LMHeadModel(config)


def digits_reward(completions: list[str], **_: Any) -> list[float]:
    """1 for each digit in the completion, capped at 1: a reward the tiny model can move."""
    return [min(1.0, sum(ch.isdigit() for ch in c) / 4) for c in completions]


def callbacks(out: Path, hold_at: int | None, gate: Path | None) -> tuple[Any, Any]:
    """(recorder, gate): the recorder goes first (the printer callback pops `total_flos` from the
    row it shares), the gate last, so it holds after every tracker has had step K's row."""
    from transformers import TrainerCallback

    class Recorder(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            with open(out / "log_rows.jsonl", "a") as f:
                f.write(json.dumps({"step": state.global_step, **(logs or {})}) + "\n")

    class Gate(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            hold(state.global_step, hold_at, gate)

    return Recorder(), Gate()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--report-to", required=True)
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--run-name", default="grpo-tiny")
    parser.add_argument("--hold-at", type=int)
    parser.add_argument("--gate")
    a = parser.parse_args()

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    out = Path(a.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = tiny_tokenizer()
    config = GRPOConfig(
        output_dir=str(out), run_name=a.run_name, report_to=[a.report_to], max_steps=a.steps,
        per_device_train_batch_size=4, num_generations=2, max_completion_length=6, logging_steps=1,
        learning_rate=1e-3, beta=0.04, use_cpu=True, disable_tqdm=True, save_strategy="no", seed=0,
        dataloader_num_workers=0,
    )
    # saved and named by its folder: with beta > 0 TRL loads the reference model from the same id
    model_dir = out / "tiny-gpt2"
    tiny_model(tokenizer).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    trainer = GRPOTrainer(
        model=str(model_dir), reward_funcs=[digits_reward], args=config,
        train_dataset=Dataset.from_dict({"prompt": PROMPTS * 4}), processing_class=tokenizer,
    )
    recorder, gate = callbacks(out, a.hold_at, Path(a.gate) if a.gate else None)
    trainer.callback_handler.callbacks.insert(0, recorder)
    trainer.add_callback(gate)
    trainer.train()


if __name__ == "__main__":
    main()
