"""verl dumps gone wrong: a truncated line, a step file still being written, mixed schema generations, 50 MB."""

from __future__ import annotations

import json
import os
import time

import pytest

from deeprepo_client.formats import detect

from .conftest import run_parse

VERL = "verl/generated-by-verl-0.9.1"


@pytest.fixture
def lines(samples) -> list[str]:
    return (samples / VERL / "rollout_data" / "2.jsonl").read_text().splitlines()


def _age(path, seconds: float = 60) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_truncated_line_is_reported_and_the_rest_kept(tmp_path, lines):
    f = tmp_path / "2.jsonl"
    f.write_text("\n".join(lines[:11]) + "\n" + lines[11][:200])
    p = run_parse(f)
    assert len(p.rollouts) == 11
    assert [(x.line, x.fatal) for x in p.problems] == [(12, False)] and "truncated" in p.problems[0].message


def test_step_file_still_being_written_waits_in_watch_mode(tmp_path, lines):
    (tmp_path / "1.jsonl").write_text("".join(json.dumps(dict(json.loads(x), step=1)) + "\n" for x in lines))
    growing = tmp_path / "2.jsonl"
    growing.write_text("\n".join(lines[:6]) + "\n" + lines[6][:100])
    _age(tmp_path / "1.jsonl")
    _age(growing)
    w = run_parse(tmp_path, partial_ok=True)
    # watch: step 2 is not read half (its groups would get wrong advantages); nothing is reported
    assert not w.problems and {r["step"] for r in w.rollouts} == {1} and len(w.rollouts) == 12
    growing.write_text("\n".join(lines) + "\n")  # the trainer finished writing it
    assert len(run_parse(tmp_path, partial_ok=True).rollouts) == 12  # not yet: just modified
    _age(growing)
    assert len(run_parse(tmp_path, partial_ok=True).rollouts) == 24


def test_mixed_schema_generations_in_one_folder(tmp_path, lines):
    """Step 1 as the legacy trainer wrote it (no gts, no extras), step 2 as 0.9.1 (request_id), step 3 with uid."""
    rows = [json.loads(x) for x in lines]
    legacy = [{k: r[k] for k in ("input", "output", "score", "step")} for r in rows]
    with_uid = [dict(r, uid=f"g{i // 4}") for i, r in enumerate(rows)]
    for step, batch in ((1, legacy), (2, rows), (3, with_uid)):
        (tmp_path / f"{step}.jsonl").write_text("".join(json.dumps(dict(r, step=step)) + "\n" for r in batch))
    assert detect(tmp_path).format == "verl"
    p = run_parse(tmp_path)
    assert not p.problems and len(p.rollouts) == 36
    by_step = {s: [r for r in p.rollouts if r["step"] == s] for s in (1, 2, 3)}
    assert "oracle" not in by_step[1][0] and by_step[1][0]["reward_components"] == {}
    assert by_step[2][0]["oracle"] == "72" and "request_id" in by_step[2][0]["metrics"]
    # the same prompts group the same way whether the groups came from prompts or from uid
    assert [r["example_key"] for r in by_step[1]] == [r["example_key"] for r in by_step[3]]
    assert by_step[3][0]["metrics"]["uid"] == "g0"


def test_a_50_mb_dump(tmp_path, lines):
    """One step of ~12,000 rollouts made from a real line: parsed in bounded batches, every row kept."""
    row = json.loads(lines[0])
    row["output"] = row["output"] + " " + "x" * 4000
    f = tmp_path / "9.jsonl"
    n = 0
    with open(f, "w") as fh:
        while fh.tell() < 50_000_000:
            fh.write(json.dumps(dict(row, request_id=f"r{n}", input=row["input"] + f" #{n // 8}")) + "\n")
            n += 1
    p = run_parse(f)
    assert not p.problems and len(p.rollouts) == n
    assert max(len(e.rollouts) for e in p.events if hasattr(e, "rollouts")) <= 500
    assert len({r["example_key"] for r in p.rollouts}) == (n + 7) // 8


def test_bare_nan_scores_and_any_ground_truth(tmp_path, lines):
    """verl writes json.dumps(..., default=str): NaN / Infinity as bare tokens, `gts` any JSON value."""
    rows = [json.loads(x) for x in lines[:4]]
    text = [json.dumps(dict(rows[0], score=float("nan"))), json.dumps(dict(rows[1], score=float("inf"))),
            json.dumps(dict(rows[2], gts=["72", 72.0])), json.dumps(dict(rows[3], gts=None))]
    assert "NaN" in text[0] and "Infinity" in text[1]
    (tmp_path / "4.jsonl").write_text("\n".join(text) + "\n")
    p = run_parse(tmp_path / "4.jsonl")
    assert not p.problems and len(p.rollouts) == 4
    assert p.rollouts[0]["reward"] is None and p.rollouts[1]["reward"] is None  # unknown, not a number
    assert p.rollouts[2]["oracle"] == '["72", 72.0]' and "oracle" not in p.rollouts[3]
    # the group's advantage is computed over the rewards that are known
    assert p.rollouts[0]["advantage"] is None and p.rollouts[2]["advantage"] is not None
