"""Running the real wandb SDK (a script in its own process) against a live server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).with_name("wandb_script.py")


def sdk_env(url: str, key: str, tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update({
        "WANDB_BASE_URL": url, "WANDB_API_KEY": key, "WANDB_DIR": str(tmp), "WANDB_CONFIG_DIR": str(tmp / "cfg"),
        "WANDB_CACHE_DIR": str(tmp / "cache"), "WANDB_DATA_DIR": str(tmp / "data"),
        # Quick batches: the tests wait for what the SDK sends, not for its 15 s default.
        "WANDB__FILE_STREAM_TRANSMIT_INTERVAL": "1",  # whole seconds: with "0.5" the newest SDK sent nothing until finish
        "WANDB_DISABLE_GIT": "true", "WANDB_DISABLE_CODE": "true", "WANDB__DISABLE_STATS": "true",
        "WANDB__DISABLE_META": "true", "WANDB_CONSOLE": "wrap", "WANDB_INIT_TIMEOUT": "60",
        "WANDB_ERROR_REPORTING": "false",
        # A busy 2-core machine starts the SDK's service process slowly; its default 30 s wait gave up in a loaded run.
        "WANDB__SERVICE_WAIT": "300",
    })
    env.update(extra)
    return env


def run_script(env: dict[str, str], spec: dict[str, Any], *, python: str = sys.executable,
               check: bool = True, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([python, str(SCRIPT), json.dumps(spec)], env=env, capture_output=True, text=True,
                          timeout=timeout)
    if check:
        assert done.returncode == 0 and "SCRIPT-DONE" in done.stdout, (done.stdout[-3000:], done.stderr[-5000:])
    return done


def start_script(env: dict[str, str], spec: dict[str, Any], *, python: str = sys.executable) -> subprocess.Popen[str]:
    return subprocess.Popen([python, str(SCRIPT), json.dumps(spec)], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(check: Callable[[], Any], timeout: float = 60, what: str = "condition") -> Any:
    """Poll until check() is truthy (no fixed sleeps)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
