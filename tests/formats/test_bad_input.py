"""Bad input never raises out of parse(): it becomes Problems and the rest still imports."""

from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path

from deeprepo_client.formats import ZipLimits, detect

from .conftest import run_parse
from .test_fixtures import vf_row


def _write_rows(path: Path, rows: list[dict]) -> list[str]:
    lines = [json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return lines


def test_malformed_line_in_the_middle(tmp_path):
    f = tmp_path / "results.jsonl"
    lines = [json.dumps(vf_row(i, i)) for i in range(5)]
    lines[2] = lines[2][:50] + "@@@"
    f.write_text("\n".join(lines) + "\n")
    p = run_parse(f)
    assert len(p.rollouts) == 4
    assert len(p.problems) == 1 and p.problems[0].line == 3 and not p.problems[0].fatal
    assert "invalid JSON" in p.problems[0].message


def test_truncated_last_line(tmp_path):
    f = tmp_path / "results.jsonl"
    lines = [json.dumps(vf_row(i, i)) for i in range(3)]
    f.write_text("\n".join(lines[:2]) + "\n" + lines[2][:100])
    p = run_parse(f)
    assert len(p.rollouts) == 2 and len(p.problems) == 1 and p.problems[0].line == 3
    assert "truncated" in p.problems[0].message
    # a streamed file still being written: silent in watch mode
    w = run_parse(f, partial_ok=True)
    assert len(w.rollouts) == 2 and not w.problems


def test_unknown_format(tmp_path):
    f = tmp_path / "x.json"
    f.write_text(json.dumps({"hello": 1, "world": [1, 2]}))
    assert detect(f) is None
    p = run_parse(f)
    assert len(p.problems) == 1 and p.problems[0].fatal
    assert "unknown format" in p.problems[0].message and "hello" in p.problems[0].message
    b = tmp_path / "blob.bin"
    b.write_bytes(b"\x00\x01binary")
    assert run_parse(b).problems[0].fatal
    assert run_parse(tmp_path / "missing").problems[0].fatal


def test_git_lfs_pointer(tmp_path):
    f = tmp_path / "results.jsonl"
    f.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:" + "a" * 64 + "\nsize 123456\n")
    assert detect(f).format == "git_lfs_pointer"
    p = run_parse(f)
    assert len(p.problems) == 1 and p.problems[0].fatal
    assert "Git LFS pointer" in p.problems[0].message and "123456" in p.problems[0].message


def test_big_inline_base64_image(tmp_path):
    uri = "data:image/png;base64," + "A" * (1 << 20)
    row = vf_row(0, 0)
    row["prompt"] = [{"role": "user", "content": [{"type": "text", "text": "look"},
                                                  {"type": "image_url", "image_url": {"url": uri}}]}]
    row["completion"].insert(1, {"role": "tool", "content": [{"type": "image_url", "image_url": {"url": uri}}]})
    f = tmp_path / "results.jsonl"
    _write_rows(f, [row] * 20)
    t0 = time.perf_counter()
    p = run_parse(f)
    assert time.perf_counter() - t0 < 2.0
    assert not p.problems and len(p.rollouts) == 20
    # the image stays in the content (the server offloads it)
    assert uri in p.rollouts[0]["turns"][0]["tool_calls"][0]["output"]


def test_zip_bomb_rejected(tmp_path):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("results.jsonl", b"\n" * (64 << 20))  # 64 MB of newlines, a few KB compressed
    before = sum(1 for _ in Path("/tmp").glob("deeprepo-zip-*"))
    t0 = time.perf_counter()
    p = run_parse(bomb, limits=ZipLimits(max_total_bytes=8 << 20))
    assert time.perf_counter() - t0 < 2.0
    assert len(p.problems) == 1 and p.problems[0].fatal and "rejected zip" in p.problems[0].message
    assert sum(1 for _ in Path("/tmp").glob("deeprepo-zip-*")) == before  # temp dir cleaned up


def test_zip_lying_header_rejected(tmp_path):
    """A member whose real size exceeds the size its header declares is stopped while reading."""
    f = tmp_path / "liar.zip"
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
        z.writestr("a.json", b"x" * 4096)
    raw = bytearray(f.read_bytes())
    # patch the declared uncompressed size (central directory) down to 10 bytes
    cd = raw.rfind(b"PK\x01\x02")
    raw[cd + 24:cd + 28] = (10).to_bytes(4, "little")
    f.write_bytes(bytes(raw))
    p = run_parse(f, fmt="zip")
    assert p.problems and p.problems[0].fatal


def test_zip_too_many_entries(tmp_path):
    f = tmp_path / "many.zip"
    with zipfile.ZipFile(f, "w") as z:
        for i in range(50):
            z.writestr(f"f{i}.txt", "x")
    p = run_parse(f, limits=ZipLimits(max_entries=10))
    assert p.problems[0].fatal and "entries" in p.problems[0].message


def test_zipped_folder_parses(tmp_path):
    folder = tmp_path / "evalrun"
    folder.mkdir()
    (folder / "metadata.json").write_text(json.dumps({"env_id": "toy", "model": "m", "num_examples": 2}))
    _write_rows(folder / "results.jsonl", [vf_row(i, i % 2) for i in range(4)])
    z = tmp_path / "upload.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in folder.iterdir():
            zf.write(f, f"evalrun/{f.name}")
    assert detect(z).format == "zip"
    p = run_parse(z)
    assert not p.problems and len(p.rollouts) == 4 and p.run["model"] == "m"
    # same uids as the unzipped folder: a re-import does not double anything
    assert [r["uid"] for r in p.rollouts] == [r["uid"] for r in run_parse(folder).rollouts]


def test_same_file_twice_same_uids(tmp_path):
    f = tmp_path / "results.jsonl"
    _write_rows(f, [vf_row(i, i % 3) for i in range(9)])
    a, b = run_parse(f), run_parse(f)
    ua, ub = [r["uid"] for r in a.rollouts], [r["uid"] for r in b.rollouts]
    assert ua == ub and len(set(ua)) == 9


def test_same_sample_twice_same_uids(samples):
    for rel in ("verifiers_eval/wordle--qwen3-30b-a3b-thinking-2507__50bdff53", "openhands/multi_swe_bench_output.jsonl",
                "inspect_ai/mmlu-summary-choices.eval", "prime_hosted_rl/bp6qd19u06wzeqkdrf0h24xx"):
        a, b = run_parse(samples / rel), run_parse(samples / rel)
        assert [r["uid"] for r in a.rollouts] == [r["uid"] for r in b.rollouts]
        assert len({r["uid"] for r in a.rollouts}) == len(a.rollouts)


def test_batches_are_bounded(tmp_path):
    f = tmp_path / "results.jsonl"
    row = json.dumps(vf_row(0, 0))
    f.write_text((row + "\n") * 1201)
    from deeprepo_client.formats import parse
    from deeprepo_client.records import RolloutsEvent

    sizes = [len(e.rollouts) for e in parse(f) if isinstance(e, RolloutsEvent)]
    assert sizes == [500, 500, 201]


def test_garbage_rows_do_not_raise(tmp_path):
    f = tmp_path / "results.jsonl"
    f.write_text(json.dumps(vf_row(0, 0)) + "\n" + json.dumps({"prompt": 1, "completion": {"weird": True}, "reward": "x"})
                 + "\n[1,2]\n")
    p = run_parse(f, fmt="verifiers")
    assert len(p.rollouts) >= 1
    assert any(pr.line == 3 for pr in p.problems)


def test_parquet_without_pyarrow(tmp_path, monkeypatch):
    import builtins

    out = tmp_path / "o"
    (out / "completions").mkdir(parents=True)
    (out / "completions" / "completions_00001.parquet").write_bytes(b"PAR1")
    (out / "trainer_state.json").write_text(json.dumps({"log_history": []}))
    real_import = builtins.__import__

    def fake_import(name, *a, **kw):
        if name.startswith("pyarrow"):
            raise ImportError("no pyarrow")
        return real_import(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    p = run_parse(out)
    assert any("pyarrow" in pr.message for pr in p.problems)
