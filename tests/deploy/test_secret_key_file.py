"""The secret key a new data directory gets: processes starting at once (gunicorn's workers) share one."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from deeprepo_web.env import secret_key_from_file


def _read_at_once(path: str, start, out) -> None:
    start.wait()
    try:
        out.put(secret_key_from_file(Path(path)))
    except Exception as exc:  # a worker that dies on it: what gunicorn saw
        out.put(f"failed: {exc!r}")


def test_workers_starting_together_on_a_new_data_dir_share_one_key(tmp_path):
    path = tmp_path / "data" / "secret_key"
    ctx = multiprocessing.get_context("fork")
    n = 8
    start, out = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_read_at_once, args=(str(path), start, out)) for _ in range(n)]
    for p in procs:
        p.start()
    keys = [out.get(timeout=30) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    assert len(set(keys)) == 1 and len(keys[0]) > 40, keys
    assert path.read_text() == keys[0] and [f.name for f in path.parent.iterdir()] == ["secret_key"]
    assert secret_key_from_file(path) == keys[0]  # read back, not made again
