"""parse_piped: parse() in a child process, events over a pipe (what big imports use)."""

from __future__ import annotations

import json
import os
import signal
import time
import zipfile
from pathlib import Path

import pytest

from deeprepo_client.formats import parse
from deeprepo_client.formats.piped import parse_piped
from deeprepo_client.records import Problem, RolloutsEvent


def _vf_folder(folder: Path, n: int, text: str = "") -> Path:
    folder.mkdir(parents=True)
    (folder / "metadata.json").write_text(json.dumps({"env_id": "toy", "model": "m"}))
    rows = []
    for i in range(n):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "search", "arguments": json.dumps({"q": i})}}
        rows.append(json.dumps({
            "example_id": i // 2, "prompt": [{"role": "user", "content": f"q{i // 2}"}],
            "completion": [{"role": "assistant", "content": f"look {i} {text}", "tool_calls": [json.dumps(call)]},
                           {"role": "tool", "content": f"result <script>{i}</script>"},
                           {"role": "assistant", "content": f"answer {i}"}],
            "reward": i % 3 / 2, "metrics": {"num_turns": 2.0},
        }))
    rows.insert(n // 2, "{not json")
    (folder / "results.jsonl").write_text("\n".join(rows) + "\n")
    return folder


def _children_parsing(path: Path) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"deeprepo_client.formats.piped" in cmd and str(path).encode() in cmd:
                pids.append(int(entry.name))
    return pids


def test_the_child_gives_the_events_of_parse(tmp_path):
    folder = _vf_folder(tmp_path / "run", 40)
    piped = list(parse_piped(folder))
    assert piped == list(parse(folder))
    rollouts = [r for e in piped if isinstance(e, RolloutsEvent) for r in e.rollouts]
    assert len(rollouts) == 40 and rollouts[7]["turns"][0]["tool_calls"][0]["output"] == "result <script>7</script>"
    bad = [e for e in piped if isinstance(e, Problem)]
    assert len(bad) == 1 and bad[0].line == 21  # the malformed line, named by its number


def test_a_zip_and_forced_format_go_through_the_child(tmp_path):
    folder = _vf_folder(tmp_path / "run", 6)
    archive = tmp_path / "run.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for f in folder.iterdir():
            z.write(f, f"run/{f.name}")
    assert list(parse_piped(archive)) == list(parse(archive))
    assert list(parse_piped(folder, fmt="verifiers")) == list(parse(folder, fmt="verifiers"))


def test_a_killed_child_is_a_fatal_problem_after_what_it_sent(tmp_path):
    folder = _vf_folder(tmp_path / "run", 30_000, text="x" * 200)
    events = parse_piped(folder)
    first = next(events)  # the run record: the child is now parsing the rows
    pids = _children_parsing(folder)
    assert len(pids) == 1
    os.kill(pids[0], signal.SIGKILL)
    rest = list(events)
    assert first.ref == "eval"
    assert isinstance(rest[-1], Problem) and rest[-1].fatal
    assert "parser process stopped" in rest[-1].message and rest[-1].file == str(folder)


def test_stopping_early_ends_the_child_and_removes_the_zip_folder(tmp_path, monkeypatch):
    folder = _vf_folder(tmp_path / "run", 20_000, text="y" * 200)
    archive = tmp_path / "run.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for f in folder.iterdir():
            z.write(f, f"run/{f.name}")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))  # where the child unpacks the zip
    events = parse_piped(archive)
    next(events)
    assert [p.name for p in scratch.iterdir() if p.name.startswith("deeprepo-zip-")]
    events.close()
    deadline = time.monotonic() + 10
    while _children_parsing(archive) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _children_parsing(archive)
    assert not [p for p in scratch.iterdir() if p.name.startswith("deeprepo-zip-")]


@pytest.mark.parametrize("name", ["missing.jsonl"])
def test_bad_input_is_reported_as_by_parse(tmp_path, name):
    assert list(parse_piped(tmp_path / name)) == list(parse(tmp_path / name))
