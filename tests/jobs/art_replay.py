"""Stand-in for an ART training script in the job test: it replays the files ART 0.5.18 really wrote
(../shared/samples/art, copied byte for byte, one step at a time) under $ART_BASE_PATH, as a
trainer would while it trains. Usage: art_replay.py SAMPLE_MODEL_DIR [SECONDS_PER_STEP (3)]"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

src = Path(sys.argv[1])
pause = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
dest = Path(os.environ["ART_BASE_PATH"]) / src.parent.parent.name / "models" / src.name
history = (src / "history.jsonl").read_text().splitlines(keepends=True)
steps = sorted(int(f.stem) for f in (src / "trajectories" / "train").glob("*.parquet"))
for step in steps:
    for split in ("train", "val"):
        f = src / "trajectories" / split / f"{step:04d}.parquet"
        (dest / "trajectories" / split).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, dest / "trajectories" / split / f.name)
    with open(dest / "history.jsonl", "a") as out:
        out.writelines(line for line in history if f'"step": {step},' in line)
    print(f"step {step} written", flush=True)
    time.sleep(pause)
shutil.copyfile(src / "state.json", dest / "state.json")
