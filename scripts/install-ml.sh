#!/usr/bin/env bash
# Installs torch and accelerate into the project's venv for the TRL callback test (a real
# transformers.Trainer on CPU). They are not in uv.lock: PyPI's torch is the CUDA build, gigabytes
# that a CPU test never uses. A CPU build is taken from $TORCH_WHEEL, or from the wheel directory
# some machines ship (/opt/wheels); otherwise torch comes from the configured index.
# `make sync` (uv sync --inexact) keeps what this installs.
set -euo pipefail
cd "$(dirname "$0")/.."
TORCH_VERSION=2.13.0
ACCELERATE_VERSION=1.15.0
# The framework tests (tests/frameworks): TRL's GRPOTrainer, and verl's own Tracking class. verl is
# installed without its dependencies (vLLM, Ray pins, CUDA kernels): `verl.utils.tracking` needs only
# what `verl/__init__` imports besides torch and Ray (tensordict, omegaconf). All need torch, so they
# stay out of uv.lock with it.
TRL_VERSION=1.16.0
VERL_VERSION=0.9.1
TENSORDICT_VERSION=0.15.3
OMEGACONF_VERSION=2.4.0

wheel="${TORCH_WHEEL:-}"
if [ -z "$wheel" ]; then
  for candidate in /opt/wheels/torch-"$TORCH_VERSION"+cpu-*.whl; do
    [ -f "$candidate" ] && wheel="$candidate"
  done
fi
torch="${wheel:-torch==$TORCH_VERSION}"
uv pip install --quiet "$torch" "accelerate==$ACCELERATE_VERSION"
uv pip install --quiet "trl==$TRL_VERSION" "tensordict==$TENSORDICT_VERSION" "omegaconf==$OMEGACONF_VERSION"
uv pip install --quiet --no-deps "verl==$VERL_VERSION"
uv run --no-sync python -c "import torch, accelerate; print('ml:', 'torch', torch.__version__, 'accelerate', accelerate.__version__)"
uv run --no-sync python -c "import trl; from verl.utils.tracking import Tracking; print('ml:', 'trl', trl.__version__, 'verl tracking ok')"
