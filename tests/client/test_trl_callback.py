"""DeeprepoCallback inside a REAL transformers.Trainer loop on CPU (a tiny GPT-2 built from a config:
no downloads), streaming to Django's live server on the test database."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from deeprepo_web.runs.models import Metric, MetricSeries, Run

pytestmark = pytest.mark.django_db(transaction=True)

_HAVE_ML = importlib.util.find_spec("torch") is not None and importlib.util.find_spec("transformers") is not None
if not _HAVE_ML:
    if os.environ.get("DEEPREPO_REQUIRE_ML") == "1":
        raise RuntimeError("DEEPREPO_REQUIRE_ML=1 but torch/transformers are not installed (make ml)")
    pytest.skip("torch and transformers are not installed (make ml); CI sets DEEPREPO_REQUIRE_ML=1",
                allow_module_level=True)


def _tiny_trainer(tmp_path, callback, max_steps=6):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config)

    class Tokens(torch.utils.data.Dataset):
        def __init__(self, n: int, seed: int) -> None:
            g = torch.Generator().manual_seed(seed)
            self.rows = torch.randint(1, 64, (n, 16), generator=g)

        def __len__(self) -> int:
            return len(self.rows)

        def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
            return {"input_ids": self.rows[i], "labels": self.rows[i]}

    args = TrainingArguments(
        output_dir=str(tmp_path / "tiny-gpt2"), max_steps=max_steps, per_device_train_batch_size=4,
        per_device_eval_batch_size=4, learning_rate=1e-3, logging_steps=1, save_steps=3, eval_strategy="steps",
        eval_steps=3, report_to=[], use_cpu=True, disable_tqdm=True, seed=0,
        dataloader_num_workers=0,
    )
    return Trainer(model=model, args=args, train_dataset=Tokens(32, 1), eval_dataset=Tokens(8, 2),
                   callbacks=[callback])


def test_trainer_streams_losses_checkpoints_and_summary(live_server, team, tmp_path):
    from deeprepo_client.integrations.trl import DeeprepoCallback

    callback = DeeprepoCallback(project="demo", name="tiny-gpt2", tags=["cpu"], url=live_server.url,
                                api_key=team.key, spool_dir=tmp_path / "spool", flush_interval=0.1)
    trainer = _tiny_trainer(tmp_path, callback)
    trainer.train()
    run = Run.objects.get(public_id=callback.run.id)
    assert run.name == "tiny-gpt2" and run.status == "finished" and run.tags == ["cpu"]
    assert run.config["model"]["vocab_size"] == 64 and run.config["trainer"]["max_steps"] == 6
    loss = MetricSeries.objects.get(run=run, key="loss")
    assert loss.count == 6 and loss.first_step == 1 and loss.last_step == 6
    history = [r for r in trainer.state.log_history if "loss" in r and "train_runtime" not in r]
    stored = dict(Metric.objects.filter(series=loss).values_list("step", "value"))
    assert stored == {r["step"]: pytest.approx(r["loss"]) for r in history}
    assert set(Metric.objects.filter(series__run=run, series__key="eval_loss").values_list("step", flat=True)) == {3, 6}
    assert MetricSeries.objects.filter(run=run, key__in=["grad_norm", "learning_rate", "epoch"]).count() == 3
    assert run.summary["train_runtime"] > 0 and run.summary["global_step"] == 6
    assert [c["step"] for c in run.summary["checkpoints"]] == [3, 6]


def test_callback_logs_into_an_existing_run_and_leaves_it_open(live_server, team, tmp_path):
    import deeprepo_client
    from deeprepo_client.integrations.trl import DeeprepoCallback

    run = deeprepo_client.init(project="demo", name="mine", url=live_server.url, api_key=team.key,
                               spool_dir=tmp_path / "spool", flush_interval=0.1)
    _tiny_trainer(tmp_path, DeeprepoCallback(run=run), max_steps=3).train()
    assert Run.objects.get(public_id=run.id).status == "running"  # the caller finishes its own run
    assert run.finish().ok
    stored = Run.objects.get(public_id=run.id)
    assert stored.status == "finished" and MetricSeries.objects.get(run=stored, key="loss").count == 3


def test_client_core_does_not_import_transformers():
    code = ("import sys, deeprepo_client, deeprepo_client.cli, deeprepo_client.watch, deeprepo_client.formats; "
            "bad = [m for m in ('transformers', 'torch') if m in sys.modules]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
