"""The embedded Postgres of a data directory (pgserver under DATA_DIR/pg), for `make run` and `manage.py`.

Both find the same server when DATABASE_URL is unset: the first one starts it, the others use it,
and the last process that holds a handle stops it at exit (pgserver counts handles per data dir).
No Django here: it runs before settings are read.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """DEEPREPO_DATA_DIR, or .data beside manage.py in a checkout, or the user's data folder when
    installed from a wheel (`deeprepo-web server`; ROOT is then site-packages). settings.py reads this."""
    if os.environ.get("DEEPREPO_DATA_DIR"):
        return Path(os.environ["DEEPREPO_DATA_DIR"]).resolve()
    if (ROOT / "manage.py").exists():
        return (ROOT / ".data").resolve()
    share = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return (Path(share) / "deeprepo-web").resolve()


def say(message: str) -> None:
    # stderr, so that commands printing tables or CSV keep a clean stdout.
    print(f"\033[1m[deeprepo]\033[0m {message}", file=sys.stderr, flush=True)


def _forget_dead_handles(pgdata: Path) -> None:
    """Drop pids of processes gone without saying so (a killed `make run`): else the server would never stop."""
    handles = pgdata / ".handle_pids.json"
    try:
        pids = json.loads(handles.read_text())
    except (OSError, ValueError):
        return
    alive = [pid for pid in pids if isinstance(pid, int) and Path(f"/proc/{pid}").exists()]
    if alive != pids:
        handles.write_text(json.dumps(alive))


def embedded_db_start(directory: Path | None = None) -> Any:
    """Start (or join) the embedded Postgres of `directory` and point DATABASE_URL at it; the server handle."""
    pgdata = (directory or data_dir()) / "pg"
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    if pgdata.exists():
        _forget_dead_handles(pgdata)
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (root shells, containers): harmless here.
        warnings.simplefilter("ignore")
        import pgserver

        # pgserver logs each handle it opens and closes at INFO: not for a command's output.
        logging.getLogger("pgserver").setLevel(logging.WARNING)
        server = pgserver.get_server(pgdata, cleanup_mode="stop")
    os.environ["DATABASE_URL"] = server.get_uri()
    return server


def database_ensure() -> Any:
    """For `manage.py`: without DATABASE_URL, use the data directory's embedded Postgres and say where it is."""
    if os.environ.get("DATABASE_URL"):
        return None
    server = embedded_db_start()
    say(f"database: {os.environ['DATABASE_URL']} (embedded Postgres in {data_dir() / 'pg'})")
    return server
