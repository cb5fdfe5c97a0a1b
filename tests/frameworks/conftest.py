"""Real training frameworks run in a subprocess against the live server, held at a step by a gate
file so a test can look at the run page while the trainer is still running."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def need(*modules: str) -> None:
    """Skip (or fail under DEEPREPO_REQUIRE_ML=1, as CI sets) when `make ml` has not installed these."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        if os.environ.get("DEEPREPO_REQUIRE_ML") == "1":
            raise RuntimeError(f"DEEPREPO_REQUIRE_ML=1 but {missing} are not installed (make ml)")
        pytest.skip(f"{missing} are not installed (make ml); CI sets DEEPREPO_REQUIRE_ML=1")


@dataclass
class Trainer:
    """A framework script running in a subprocess."""

    proc: subprocess.Popen[str]
    out: Path
    gate: Path
    log: Path
    lines: list[str] = field(default_factory=list)

    def release(self) -> None:
        self.gate.touch()

    def wait(self, timeout: float = 300) -> None:
        code = self.proc.wait(timeout=timeout)
        assert code == 0, self.log.read_text()[-4000:]

    def rows(self) -> list[dict[str, Any]]:
        """The trainer's own log rows (what it handed its trackers)."""
        path = self.out / "log_rows.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def start_script(tmp_path: Path) -> Iterator[Callable[..., Trainer]]:
    started: list[Trainer] = []

    def start(script: str, *args: str, env: dict[str, str | None] | None = None,
              hold_at: int | None = None) -> Trainer:
        """Run tests/frameworks/<script> with `env` over ours (a None value unsets a variable)."""
        out = tmp_path / f"{Path(script).stem}-{len(started)}"
        out.mkdir()
        gate = out / "go"
        log = out / "stdout.log"
        extra = ["--hold-at", str(hold_at), "--gate", str(gate)] if hold_at is not None else []
        merged = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", **(env or {}),
                  "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        full_env = {k: v for k, v in merged.items() if v is not None}
        with open(log, "w") as fh:
            proc = subprocess.Popen([sys.executable, str(HERE / script), "--output-dir", str(out), *args, *extra],
                                    stdout=fh, stderr=subprocess.STDOUT, text=True, env=full_env, cwd=out)
        trainer = Trainer(proc, out, gate, log)
        started.append(trainer)
        return trainer

    yield start
    for trainer in started:
        if trainer.proc.poll() is None:
            trainer.proc.kill()
            trainer.proc.wait()


def poll(check: Callable[[], Any], *, timeout: float, what: str, trainer: Trainer | None = None,
         between: Callable[[], Any] | None = None) -> Any:
    """Call `check` until it returns something true; `between` runs before each try (a watch pass)."""
    deadline = time.monotonic() + timeout
    while True:
        if between is not None:
            between()
        value = check()
        if value:
            return value
        if trainer is not None and trainer.proc.poll() not in (None, 0):
            raise AssertionError(f"the trainer died while waiting for {what}:\n{trainer.log.read_text()[-4000:]}")
        assert time.monotonic() < deadline, f"no {what} after {timeout} s"
        time.sleep(0.2)
