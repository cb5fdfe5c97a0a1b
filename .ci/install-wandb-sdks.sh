#!/usr/bin/env bash
# The older wandb SDKs the W&B-compatible server is tested with (0.21, and 0.17.9's legacy Python
# sender), each in a venv of its own under ~/.cache/deeprepo/wandb-sdks (kept: a rerun is instant).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null || pip install -q uv
uv run --frozen --group dev python -m tests.wandb_server.venvs
