"""The secret key a new data directory gets: processes starting at once (gunicorn's workers) share one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from deeprepo_web.env import secret_key_from_file

# Each worker is a new interpreter (not a fork of this one: a fork of a process with threads can hang on a
# lock a thread held, and would keep the browser driver's pipe open). It says it is ready, waits for the go,
# then asks for the key, as a gunicorn worker does when it boots.
WORKER = """
import sys
from pathlib import Path
from deeprepo_web.env import secret_key_from_file
print("ready", flush=True)
sys.stdin.readline()
try:
    print(secret_key_from_file(Path(sys.argv[1])), flush=True)
except Exception as exc:
    print(f"failed: {exc!r}", flush=True)
"""
ROOT = Path(__file__).resolve().parents[2]


def test_workers_starting_together_on_a_new_data_dir_share_one_key(tmp_path):
    path = tmp_path / "data" / "secret_key"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(path)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for p in procs:  # the go, to all of them as close together as this loop writes
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        keys = [p.communicate(timeout=60)[0].strip() for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert len(set(keys)) == 1 and len(keys[0]) > 40, keys
    assert path.read_text() == keys[0] and [f.name for f in path.parent.iterdir()] == ["secret_key"]
    assert secret_key_from_file(path) == keys[0]  # read back, not made again
