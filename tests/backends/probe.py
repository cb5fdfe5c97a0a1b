"""The job the backend tests run: records exactly what it received, then behaves as told.

Control comes from PROBE_* variables; everything else it receives is the data under test.
Standard library only, so any Python (system, venv, the SSH user's) can run it.
"""

import json
import os
import sys
import time

print("probe started", flush=True)
print("probe stderr line", file=sys.stderr, flush=True)
record = {
    "argv": sys.argv[1:],
    "env": {k: v for k, v in os.environ.items() if k.startswith("DEEPREPO_")},
    "cwd": os.getcwd(),
    "uid": os.getuid(),
    "pid": os.getpid(),
}
out = os.environ["PROBE_OUT"]
with open(out + ".tmp", "w") as f:
    json.dump(record, f)
os.replace(out + ".tmp", out)
time.sleep(float(os.environ.get("PROBE_SLEEP", "0")))
print("probe done", flush=True)
sys.exit(int(os.environ.get("PROBE_EXIT", "0")))
