"""Older wandb SDKs in venvs of their own, made once and kept (a rerun finds them ready).

`python -m tests.wandb_server.venvs` makes them all (.ci/install-wandb-sdks.sh calls it); the tests'
fixture makes a missing one on first use. Without network the tests of that version skip, except
under CI (CI=true or DEEPREPO_REQUIRE_WANDB_SDKS=1), where a missing SDK is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

# 0.21: the last Go core before 0.22's settings rework; 0.17.9: the last with the legacy Python sender
# as its default (wandb-core was opt-in).
VERSIONS = {"0.21.4": ["wandb==0.21.4", "numpy<3", "pillow"],
            "0.17.9": ["wandb==0.17.9", "numpy<2", "pillow", "setuptools<81"]}


def venv_root() -> Path:
    return Path(os.environ.get("DEEPREPO_WANDB_SDKS", Path.home() / ".cache" / "deeprepo" / "wandb-sdks"))


def required() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true") or os.environ.get("DEEPREPO_REQUIRE_WANDB_SDKS") == "1"


def sdk_python(version: str) -> Path:
    """The python of a venv holding wandb==version, made if missing; raises RuntimeError if it cannot be."""
    root = venv_root() / version
    python = root / "bin" / "python"
    ready = root / ".ready"
    if ready.exists() and python.exists():
        return python
    uv = shutil.which("uv")
    if uv is None:
        raise RuntimeError("uv is not on PATH: it makes the old wandb SDKs' venvs")
    shutil.rmtree(root, ignore_errors=True)
    root.parent.mkdir(parents=True, exist_ok=True)
    steps = [[uv, "venv", "-q", "--python", sys.executable, str(root)],
             [uv, "pip", "install", "-q", "--python", str(python), *VERSIONS[version]]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(step)} failed: {done.stderr[-2000:]}")
    ready.write_text(version)
    return python


if __name__ == "__main__":
    for v in VERSIONS:
        print(v, sdk_python(v))
