"""Bad input through the server importer: a clear problem (file, line, what), the good rows stored, no doubles."""

from __future__ import annotations

import base64
import json
import zipfile

from deeprepo_web.runs.models import Rollout, Run, ToolCall, Turn
from deeprepo_web.storage import blob_get

from .conftest import counts, vf_row, write_vf


def test_malformed_line_in_the_middle_keeps_the_rest(tmp_path, do_import):
    rows = [json.dumps(vf_row(i, i % 3)) for i in range(6)]
    rows[2] = rows[2][:40] + "@@@"
    folder = write_vf(tmp_path / "run", rows)
    report = do_import(folder)
    assert [(p["line"], p["fatal"]) for p in report.problems] == [(3, False)]
    assert report.problems[0]["file"].endswith("results.jsonl") and "invalid JSON" in report.problems[0]["message"]
    run = Run.objects.get(public_id=report.runs[0].public_id)
    assert counts(run)["rollouts"] == 5
    assert sorted(Rollout.objects.filter(run=run).values_list("reward", flat=True)) == [0.0, 0.1, 0.3, 0.4, 0.5]


def test_truncated_file_reports_the_last_line(tmp_path, do_import):
    rows = [json.dumps(vf_row(i, i)) for i in range(4)]
    folder = tmp_path / "run"
    write_vf(folder, rows[:3])
    with open(folder / "results.jsonl", "a") as f:
        f.write(rows[3][:120])  # the writer died mid-line
    report = do_import(folder)
    assert len(report.problems) == 1 and report.problems[0]["line"] == 4
    assert "truncated" in report.problems[0]["message"]
    assert Rollout.objects.count() == 3


def test_unknown_format_is_refused_and_nothing_is_created(tmp_path, do_import):
    f = tmp_path / "notes.json"
    f.write_text(json.dumps({"hello": 1, "world": [1, 2]}))
    report = do_import(f)
    assert not report.imported_anything and Run.objects.count() == 0
    assert report.problems[0]["fatal"] and "unknown format" in report.problems[0]["message"]
    assert "hello" in report.problems[0]["message"]  # says what the file looked like


def test_git_lfs_pointer_says_to_pull(tmp_path, do_import):
    f = tmp_path / "results.jsonl"
    f.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:" + "a" * 64 + "\nsize 123456\n")
    report = do_import(f)
    assert not report.imported_anything and Run.objects.count() == 0
    assert "Git LFS pointer" in report.problems[0]["message"] and "git lfs pull" in report.problems[0]["message"]


def test_one_megabyte_image_goes_to_the_blob_store(tmp_path, do_import, settings):
    image = base64.b64encode(b"\x89PNG" + bytes(range(256)) * 3000).decode()  # ~1 MB of base64
    row = vf_row(0, 0)
    row["completion"][0]["content"] = [
        {"type": "text", "text": "here is the chart"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{image}"}},
    ]
    folder = write_vf(tmp_path / "run", [row, vf_row(1, 1)])
    report = do_import(folder)
    assert not report.problems
    turn = Turn.objects.get(rollout__example__key="0", index=0)
    # The image itself went to the store (content addressed); the text keeps a small marker.
    assert len(turn.content) < 20_000 and turn.content.startswith("here is the chart")
    (ref,) = turn.metadata["images"]
    assert f"blob:{ref['sha']}" in turn.content
    assert blob_get(ref["sha"]) == base64.b64decode(image)
    assert Rollout.objects.count() == 2


def test_zip_bomb_is_rejected(tmp_path, do_import, settings):
    settings.DEEPREPO_IMPORT_MAX_UNZIPPED_BYTES = 5_000_000
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("run/metadata.json", json.dumps({"env_id": "x", "model": "m", "num_examples": 1}))
        z.writestr("run/results.jsonl", b" " * 50_000_000)  # 50 MB of spaces, ~50 KB compressed
    assert bomb.stat().st_size < 200_000
    report = do_import(bomb)
    assert not report.imported_anything and Run.objects.count() == 0
    assert "rejected zip" in report.problems[0]["message"] and "limit 5000000" in report.problems[0]["message"]


def test_zipped_folder_imports_and_problems_name_the_file_inside(tmp_path, do_import):
    rows = [json.dumps(vf_row(i, i)) for i in range(3)]
    rows[1] = "{oops"
    z = tmp_path / "upload.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("toy-run/metadata.json", json.dumps({"env_id": "toy", "model": "m", "num_examples": 3}))
        zf.writestr("toy-run/results.jsonl", "\n".join(rows) + "\n")
    report = do_import(z)
    assert Rollout.objects.count() == 2
    assert report.problems[0]["file"].endswith("upload.zip!/toy-run/results.jsonl") and report.problems[0]["line"] == 2


def test_same_file_twice_doubles_nothing(tmp_path, do_import):
    folder = write_vf(tmp_path / "run", [vf_row(i, i % 3) for i in range(6)])
    first = do_import(folder)
    before = counts()
    assert before["rollouts"] == 6 and before["tool_calls"] == 6 and first.runs[0].created
    again = do_import(folder)
    assert not again.runs[0].created and again.runs[0].public_id == first.runs[0].public_id
    assert again.runs[0].rollouts == 0 and again.runs[0].rollouts_received == 6
    assert counts() == before


def test_grown_file_adds_only_the_new_rows(tmp_path, do_import):
    folder = write_vf(tmp_path / "run", [vf_row(i, i % 3) for i in range(4)])
    do_import(folder)
    write_vf(folder, [vf_row(i, i % 3) for i in range(7)])
    report = do_import(folder)
    assert report.runs[0].rollouts == 3 and Rollout.objects.count() == 7 and ToolCall.objects.count() == 7


def test_nul_bytes_and_lone_surrogates_are_stored_cleaned(tmp_path, do_import):
    row = vf_row(0, 0)
    row["completion"][2]["content"] = "bad\x00byte and \ud800 surrogate"
    folder = tmp_path / "run"
    write_vf(folder, [json.dumps(vf_row(1, 1))])
    with open(folder / "results.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")  # json.dumps escapes both: \u0000 and \ud800
    report = do_import(folder)
    assert not report.problems and Rollout.objects.count() == 2
    assert Turn.objects.get(rollout__example__key="0", index=1).content == "bad\ufffdbyte and \ufffd surrogate"


def test_a_bad_batch_is_reported_and_the_others_stay(tmp_path, do_import):
    rows = [vf_row(i, i) for i in range(5)]
    rows[3]["example_id"] = 3
    rows[3]["metrics"]["num_turns"] = 1e30  # does not fit an int column: this rollout alone fails
    folder = write_vf(tmp_path / "run", rows)
    report = do_import(folder)
    assert Rollout.objects.count() == 4
    assert len(report.problems) == 1
    assert "rollout of example '3'" in report.problems[0]["message"] and "not stored" in report.problems[0]["message"]
