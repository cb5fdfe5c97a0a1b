"""Writes a Trackio project with the real `trackio` package (local only; run by the tests in a child
process with TRACKIO_DIR set): metrics at every step (one NaN), a table, a trace with a tool call."""

from __future__ import annotations

import sys

import trackio

STEPS = 25


def reward(step: int) -> float:
    return round(0.03 * step, 6)


def main(project: str) -> None:
    trackio.init(project=project, name="trackio-run", config={"lr": 0.0005, "model": "tiny-policy"})
    for step in range(1, STEPS + 1):
        values: dict = {"train/reward": reward(step), "train/loss": float("nan") if step == 4 else 1.0 / step}
        if step == 5:
            values["samples"] = trackio.Table(columns=["prompt", "completion", "reward"], data=[
                ["2+2?", "4", 1.0], ["2+2?", "5", 0.0]])
        if step == 10:
            values["episode"] = trackio.Trace(
                messages=[{"role": "user", "content": "What is 6*7?"},
                          {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
                              "name": "calc", "arguments": "{\"e\": \"6*7\"}"}}]},
                          {"role": "tool", "tool_call_id": "c1", "content": "42"},
                          {"role": "assistant", "content": "42"}],
                metadata={"reward": 1.0})
        trackio.log(values, step=step)
    trackio.finish()


if __name__ == "__main__":
    main(sys.argv[1])
