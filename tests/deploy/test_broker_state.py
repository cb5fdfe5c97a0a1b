"""The filesystem broker (no CELERY_BROKER_URL) keeps all its state under the data directory: its
exchange tables too, which kombu would otherwise write into `control/` of the working directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# A broadcast (what `celery inspect` does) binds its reply queue: kombu writes that exchange's table.
BROADCAST = "from workers.celery import app; app.control.ping(timeout=0.2)"


def test_exchange_tables_go_under_the_data_dir_not_the_working_dir(tmp_path: Path) -> None:
    data, cwd = tmp_path / "data", tmp_path / "elsewhere"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CELERY_")}
    env.update(DEEPREPO_DATA_DIR=str(data), PYTHONPATH=str(REPO))

    done = subprocess.run([sys.executable, "-c", BROADCAST], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)

    assert done.returncode == 0, done.stderr
    assert [p.name for p in (data / "broker" / "control").iterdir()] == ["reply.celery.pidbox.exchange"]
    assert list(cwd.iterdir()) == []
