"""Parse throughput of TensorBoard event files: a logdir written by the real tensorboardX writer
(STEPS steps of KEYS scalars through `add_scalar`, one event per value, as PyTorch writes them),
read by deeprepo_client.formats.parse() with the C CRC-32C (google-crc32c) and with the pure-Python
fallback. Prints one JSON object on the last line: {"points_per_s_c": N, "points_per_s_py": N, ...}.

    uv run --no-sync python bench/tensorboard_parse.py [STEPS]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from deeprepo_client.formats import parse, tfrecord
from deeprepo_client.records import MetricsEvent, Problem

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
KEYS = 10


def write(root: Path) -> None:
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(root / "run"), max_queue=1000, flush_secs=600)
    for step in range(STEPS):
        for k in range(KEYS):
            writer.add_scalar(f"train/key_{k}", step * 0.001 + k, step)
    writer.close()


def timed_parse(root: Path) -> tuple[float, int]:
    start = time.perf_counter()
    values = 0
    for ev in parse(root):
        if isinstance(ev, Problem):
            raise SystemExit(f"unexpected problem: {ev}")
        if isinstance(ev, MetricsEvent):
            values += sum(len(p["values"]) for p in ev.points)
    return time.perf_counter() - start, values


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write(root)
        size = sum(p.stat().st_size for p in root.rglob("events.out.tfevents.*"))
        c_seconds, values = timed_parse(root)
        assert values == STEPS * KEYS, values
        c_impl = tfrecord._crc32c_c
        tfrecord._crc32c_c = None  # the fallback a client without google-crc32c uses
        try:
            py_seconds, _ = timed_parse(root)
        finally:
            tfrecord._crc32c_c = c_impl
    print(json.dumps({"values": values, "file_mb": round(size / 1e6, 2),
                      "seconds_c": round(c_seconds, 3), "points_per_s_c": round(values / c_seconds),
                      "mb_per_s_c": round(size / 1e6 / c_seconds, 2),
                      "seconds_py": round(py_seconds, 3), "points_per_s_py": round(values / py_seconds),
                      "mb_per_s_py": round(size / 1e6 / py_seconds, 2)}))


if __name__ == "__main__":
    main()
