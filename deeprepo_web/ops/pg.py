"""The database as libpq tools see it: env for pg_dump / pg_restore built from Django's settings."""

from __future__ import annotations

import os
import subprocess
from typing import Any

from django.db import connections


def libpq_env(alias: str = "default") -> dict[str, str]:
    cfg: dict[str, Any] = connections[alias].settings_dict
    env = {**os.environ, "PGDATABASE": str(cfg["NAME"])}
    for key, var in (("HOST", "PGHOST"), ("PORT", "PGPORT"), ("USER", "PGUSER"), ("PASSWORD", "PGPASSWORD")):
        if cfg.get(key):
            env[var] = str(cfg[key])
    return env


def run_tool(args: list[str], alias: str = "default") -> None:
    """Run a libpq tool; its stderr becomes the error (arguments are a list: nothing passes a shell)."""
    done = subprocess.run(args, env=libpq_env(alias), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
