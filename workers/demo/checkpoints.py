"""The demo policy's checkpoints: one .npz of its weights per saved step."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from workers.demo.policy import SoftmaxPolicy


def checkpoint_name(step: int) -> str:
    """The artifact name (and the path under the checkpoint folder's parent) of a step's checkpoint."""
    return f"checkpoints/step-{step:06d}.npz"


def checkpoint_save(policy: SoftmaxPolicy, root: Path, step: int) -> Path:
    path = root / checkpoint_name(step)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, weights=policy.weights, step=np.array(step))
    tmp.replace(path)  # an eval launched on this path never reads half a file
    return path


def checkpoint_load(path: str | Path) -> SoftmaxPolicy:
    with np.load(path) as data:
        return SoftmaxPolicy(np.array(data["weights"], dtype=float))
