"""TensorBoard logdirs written by the real tensorboardX writer: both scalar forms, text, a histogram.

`add_scalar` writes `simple_value` (as PyTorch's does by default). The tensor form is what TF2's
`tf.summary.scalar` writes (a one-element tensor, its `scalars` plugin metadata only with the tag's
first value; float32 as raw `tensor_content`) and PyTorch's `new_style=True` (float `double_val` /
`float_val` with metadata every time): built here from tensorboardX's own protobuf classes, which
are TensorFlow's, and written by its own event writer.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tensorboardX import SummaryWriter
from tensorboardX.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboardX.proto.tensor_pb2 import TensorProto

STEPS = 6
DT_FLOAT, DT_DOUBLE = 1, 2


def loss(step: int) -> float:
    return float(np.float32(1.0 / (step + 1)))  # simple_value is a float32


def reward(step: int) -> float:
    return float(np.float32(step * 0.5))


def kl(step: int) -> float:
    return step * 0.125


def _scalars_meta() -> SummaryMetadata:
    return SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))


def write_step(writer: SummaryWriter, step: int) -> None:
    writer.add_scalar("train/loss", 1.0 / (step + 1), step)
    tf2 = Summary.Value(tag="train/reward", tensor=TensorProto(dtype=DT_FLOAT,
                                                               tensor_content=np.float32(step * 0.5).tobytes()))
    if step == 0:  # TF2 sends a tag's metadata with its first value only
        tf2.metadata.CopyFrom(_scalars_meta())
    new_style = Summary.Value(tag="train/kl", metadata=_scalars_meta(),
                              tensor=TensorProto(dtype=DT_DOUBLE, double_val=[kl(step)]))
    writer._get_file_writer().add_summary(Summary(value=[tf2, new_style]), step)


def write_logdir(root: Path) -> None:
    """runs/policy: STEPS steps of the three scalars, the args as JSON text, a sample text, a
    histogram; runs/baseline: one scalar."""
    writer = SummaryWriter(str(root / "runs" / "policy"))
    writer.add_text("args", '{"learning_rate": 0.001, "per_device_train_batch_size": 4}')
    for step in range(STEPS):
        write_step(writer, step)
    writer.add_text("sample", "<b>2+2</b> = 4", 3)
    writer.add_text("sample", "3+3 = 6", 5)
    writer.add_histogram("weights", np.arange(10.0), 1)
    writer.close()
    writer = SummaryWriter(str(root / "runs" / "baseline"))
    writer.add_scalar("train/loss", 2.5, 7)
    writer.close()
