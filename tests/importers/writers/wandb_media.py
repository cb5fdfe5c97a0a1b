"""Writes a W&B run with the real `wandb` package in offline mode that logs media outside tables:
an image under the same key at steps 1 and 2 (with a caption), a list of two images and an HTML
page at step 2. Run in a
child process by tests/importers/test_wandb_media.py."""

from __future__ import annotations

import sys

import numpy as np
import wandb

HTML = "<h1>report</h1><script>alert(1)</script>"


def pixels(step: int) -> np.ndarray:
    """An 8x8 RGB image whose colour depends on the step, so the two files differ."""
    img = np.zeros((8, 8, 3), dtype=np.uint8)
    img[:, :, step % 3] = min(255, 120 * step)
    return img


def main(name: str) -> None:
    run = wandb.init(project="media-import-test", name=name, mode="offline")
    for step in (1, 2):
        run.log({"samples/board": wandb.Image(pixels(step), caption=f"board at {step}"), "loss": 1.0 / step},
                step=step)
    run.log({"report": wandb.Html(HTML), "grid": [wandb.Image(pixels(i + 3)) for i in range(2)]}, step=2)
    run.finish()


if __name__ == "__main__":
    main(sys.argv[1])
