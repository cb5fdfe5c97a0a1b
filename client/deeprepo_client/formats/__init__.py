"""Foreign RL output formats -> neutral records (see records.py).

`detect(path)` recognises a file or folder by its CONTENT (keys and structure, never file
extensions or version numbers: every tool changed its schema several times). `parse(path)`
streams Events: a RunEvent per ref first, then batches of metrics / rollouts / rewards, and a
Problem for whatever cannot be read. parse() never raises for bad input.
"""

from __future__ import annotations

import json
import re
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..records import Detected, Event, MetricsEvent, Problem, RewardsEvent, RolloutsEvent, RunEvent
from . import (
    _frameworks,
    openhands,
    prime_hosted,
    prime_rl,
    swe_agent,
    swebench,
    trl,
    verifiers,
    wandb_export,
)
from . import inspect as inspect_fmt
from . import mlflow as mlflow_fmt
from . import tensorboard as tensorboard_fmt
from . import trackio as trackio_fmt
from . import wandb as wandb_fmt
from ._json import LFS_PREFIX
from ._patches import patch_touches_tests
from ._zips import SafeZip, ZipLimits, ZipRejected, rmtree_quiet

__all__ = ["detect", "parse", "patch_touches_tests", "ZipLimits", "FORMATS"]

HEAD_BYTES = 8 << 20  # how much of a pretty-printed JSON document we scan for its top-level keys
MAX_WALK = 5000  # files looked at when a folder holds several runs

# A quoted string (with an optional ':' that makes it a key) or a bracket; strings are skipped whole,
# so a megabyte of base64 inside a value costs one regex step.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"\s*:?|[{}\[\]]')


def _keys(head: bytes) -> tuple[set[str], set[str]]:
    """Keys at depth 1 and depth 2 of the JSON document that starts `head` (which may be cut short)."""
    stack: list[int] = []
    k1: set[str] = set()
    k2: set[str] = set()
    for m in _TOKEN.finditer(head):
        t = m.group()
        c = t[0]
        if c in b"{[":
            stack.append(c)
        elif c in b"}]":
            if stack:
                stack.pop()
            if not stack:
                break
        elif t.endswith(b":") and stack and stack[-1] == ord("{") and len(stack) <= 2:
            key = t[1:t.rindex(b'"')].decode("utf-8", "replace")
            (k1 if len(stack) == 1 else k2).add(key)
    return k1, k2


def _classify(k1: set[str], k2: set[str]) -> str | None:
    """Format from the keys of a JSON document or of the first JSON line."""
    framework = _frameworks.line_format(k1)
    if framework:
        return framework
    if "log_history" in k1:
        return "trl"
    if "trajectory" in k1 and ({"info", "history"} & k1):
        return "swe_agent_traj"
    if swebench.looks_like_summary(k1):
        return "swebench_summary"
    if "resolved" in k2 and ({"tests_status", "patch_exists", "patch_is_None"} & k2):
        return "swebench_reports"
    if "eval" in k1 and ({"samples", "results", "stats", "plan"} & k1):
        return "inspect_json"
    if "instance_id" in k1 and "history" in k1:
        return "openhands"
    if "instance_id" in k1 and "model_patch" in k1:
        return "swe_agent_preds"
    if "nodes" in k1 and ({"calls", "rewards", "group", "run"} & k1):
        return "prime_rl"
    if "prompt" in k1 and "completion" in k1:
        return "prime_hosted" if "problem_id" in k1 else "verifiers"
    if "run" in k1 and ({"base_model", "rollouts_per_example", "max_steps"} & k2):
        return "prime_hosted"  # metadata.json of a hosted export
    if k1 == {"metrics"} or ("samples" in k1 and "total_pages" in k1):
        return "prime_hosted"  # metrics_raw.json / rollouts_raw.json
    if "model" in k1 and ({"env_id", "env"} & k1) and ({"num_examples", "rollouts_per_example"} & k1):
        return "verifiers"  # metadata.json of an eval
    if "step" in k1 and len(k1) >= 2 and not ({"prompt", "completion", "messages"} & k1):
        return "prime_rl"  # metrics.jsonl: {step, time, scalars...}
    return None


def _is_jsonl(path: Path) -> tuple[set[str], bool]:
    """Keys of the first line when it is a complete JSON object (JSON lines, or a one-line document)."""
    with open(path, "rb") as f:
        first = f.readline(HEAD_BYTES)
    try:
        obj = json.loads(first)
    except ValueError:
        return set(), False
    return (set(obj) if isinstance(obj, dict) else set()), isinstance(obj, dict)


def _detect_file(path: Path) -> Detected | None:
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
    if head.startswith(LFS_PREFIX):
        return Detected("git_lfs_pointer", str(path), {"pointer": head[:300].decode("utf-8", "replace")})
    if wandb_fmt.is_wandb_log(head):
        return Detected("wandb", str(path))
    if tensorboard_fmt.is_event_file(head):
        return Detected("tensorboard", str(path))
    if head.startswith(trackio_fmt.SQLITE) and trackio_fmt.is_project(path):
        return Detected("trackio", str(path))
    refused = _frameworks.binary_format(path, head)
    if refused:
        return refused
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        try:
            with zipfile.ZipFile(path) as z:
                names = z.namelist()
        except (zipfile.BadZipFile, OSError):
            return None
        if "header.json" in names or "_journal/start.json" in names or any(
                n.startswith("samples/") and "_epoch_" in n for n in names):
            return Detected("inspect_eval", str(path))
        return Detected("zip", str(path), {"entries": len(names)})
    text = head.lstrip()
    if not text.startswith(b"{"):
        return None
    keys, one_line = _is_jsonl(path)
    if one_line:
        fmt = _classify(keys, _keys(head)[1])
        if fmt == "prime_rl" and not _frameworks.scalar_row(_frameworks.first_object(path)):
            fmt = None  # {step, ...} with text or objects in it is no metrics.jsonl: never guess
    else:
        k1, k2 = _keys(head)
        fmt = _classify(k1, k2)
    return Detected(fmt, str(path)) if fmt else None


def _detect_dir_specific(path: Path) -> Detected | None:
    """A folder that is one run in a known layout."""
    framework = _frameworks.dir_format(path)
    if framework:
        return framework
    names = {p.name for p in path.iterdir()}
    if wandb_fmt.is_run_or_runs(path, names):
        return Detected("wandb", str(path))
    if mlflow_fmt.is_export(path, names):
        return Detected("mlflow", str(path))
    if tensorboard_fmt.is_run_dir(path, names):
        return Detected("tensorboard", str(path))
    if any(n.endswith((".db", "_configs.parquet")) for n in names) and trackio_fmt.is_project(path):
        return Detected("trackio", str(path))
    if {"metrics_raw.json", "rollouts_raw.json"} & names:
        return Detected("prime_hosted", str(path))
    if "results.jsonl" in names:
        if "metadata.json" in names:
            d = _detect_file(path / "metadata.json")
            if d and d.format == "prime_hosted":
                return Detected("prime_hosted", str(path))
        d = _detect_file(path / "results.jsonl")
        if d and d.format in ("prime_hosted", "verifiers"):
            return Detected(d.format, str(path))
    if "trainer_state.json" in names or any(
            n.startswith("checkpoint-") and (path / n / "trainer_state.json").exists() for n in names) or (
            (path / "completions").is_dir() and any((path / "completions").glob("completions_*.parquet"))):
        return Detected("trl", str(path))
    if "metrics.jsonl" in names or ((path / "rollouts").is_dir() and any((path / "rollouts").glob("**/traces.jsonl"))):
        return Detected("prime_rl", str(path))
    if any(n.endswith(".traj") for n in names):
        return Detected("swe_agent_traj", str(path))
    if "report.json" in names:
        return Detected("swebench_reports", str(path))
    if wandb_export.is_export(path, names):
        return Detected("wandb_export", str(path))
    return None


def _detect_dir(path: Path) -> Detected | None:
    d = _detect_dir_specific(path)
    if d:
        return d
    parts: list[Detected] = []
    reports = False
    seen = 0
    stack = [path]
    while stack and seen < MAX_WALK:
        folder = stack.pop()
        for child in sorted(folder.iterdir()):
            seen += 1
            if child.name.startswith("."):
                continue
            if child.is_dir():
                sub = _detect_dir_specific(child)
                if sub is None:
                    stack.append(child)
                elif sub.format == "swebench_reports":
                    reports = True  # one run for the whole logs/run_evaluation tree
                else:
                    parts.append(sub)
            elif child.is_file():
                f = _detect_file(child)
                if f and f.format not in ("git_lfs_pointer", "zip"):
                    parts.append(f)
    if reports:
        parts.append(Detected("swebench_reports", str(path)))
    if len(parts) == 1:
        return parts[0]
    if parts and all(p.format == "tensorboard" for p in parts):
        return Detected("tensorboard", str(path))  # a logdir: one import, runs named by their folders
    if parts:
        return Detected("multi", str(path), {"parts": parts})
    return None


def detect(path: str | Path) -> Detected | None:
    p = Path(path)
    try:
        if p.is_dir():
            return _detect_dir(p)
        if p.is_file():
            return _detect_file(p)
    except OSError:
        return None
    return None


def _describe(p: Path) -> str:
    """What an unknown input looks like, for the fatal Problem."""
    try:
        if p.is_dir():
            names = sorted(c.name for c in p.iterdir())[:20]
            return f"a folder holding {names}"
        with open(p, "rb") as f:
            head = f.read(HEAD_BYTES)
        if head.lstrip().startswith(b"{"):
            keys, one = _is_jsonl(p)
            k1 = keys if one else _keys(head)[0]
            return f"a JSON object with keys {sorted(k1)[:30]}"
        if head.lstrip().startswith(b"["):
            return "a JSON array"
        if b"\x00" in head[:4096]:
            return f"binary data starting {head[:8]!r}"
        return f"text starting {head[:80].decode('utf-8', 'replace')!r}"
    except OSError as e:
        return f"unreadable ({e})"


def _lfs_problem(path: Path) -> Problem:
    with open(path, "rb") as f:
        text = f.read(1024).decode("utf-8", "replace")
    oid = re.search(r"oid (\S+)", text)
    size = re.search(r"size (\d+)", text)
    return Problem(str(path), None,
                   f"this is a Git LFS pointer, not the data (oid {oid.group(1) if oid else '?'}, "
                   f"size {size.group(1) if size else '?'} bytes): run `git lfs pull` and import the real file",
                   fatal=True)


def _parse_zip(path: Path, partial_ok: bool, limits: ZipLimits | None) -> Iterator[Event]:
    """A folder uploaded as .zip: extract with caps into a temp dir, then parse that folder."""
    tmp = Path(tempfile.mkdtemp(prefix="deeprepo-zip-"))
    try:
        try:
            z = SafeZip(path, limits)
            try:
                z.extract_all(tmp)
            finally:
                z.close()
        except (ZipRejected, zipfile.BadZipFile, OSError) as e:
            yield Problem(str(path), None, f"rejected zip: {e}", fatal=True)
            return
        # a zip of one folder: look inside that folder
        entries = [c for c in tmp.iterdir() if not c.name.startswith("__MACOSX")]
        root = entries[0] if len(entries) == 1 and entries[0].is_dir() else tmp
        d = detect(root)
        if d is None:
            yield Problem(str(path), None, f"unknown format inside zip: {_describe(root)}", fatal=True)
            return
        for ev in _dispatch(d, partial_ok, limits):
            if isinstance(ev, Problem):
                # name the file as the user knows it: inside the uploaded zip
                ev.file = ev.file.replace(str(tmp), str(path) + "!")
            yield ev
    finally:
        rmtree_quiet(tmp)


Parser = Callable[..., Iterator[Event]]
FORMATS: dict[str, Parser] = {
    "verifiers": verifiers.parse,
    "prime_hosted": prime_hosted.parse,
    "trl": trl.parse,
    "inspect_eval": inspect_fmt.parse,
    "inspect_json": inspect_fmt.parse,
    "swe_agent_traj": swe_agent.parse_traj,
    "swe_agent_preds": swe_agent.parse_preds,
    "openhands": openhands.parse,
    "swebench_summary": swebench.parse_summary,
    "swebench_reports": swebench.parse_reports,
    "prime_rl": prime_rl.parse,
    **_frameworks.PARSERS,
    "wandb": wandb_fmt.parse,
    "mlflow": mlflow_fmt.parse,
    "trackio": trackio_fmt.parse,
    "wandb_export": wandb_export.parse,
    "tensorboard": tensorboard_fmt.parse,
}


def _prefixed(events: Iterator[Event], prefix: str) -> Iterator[Event]:
    """Refs are unique per import: a folder of several runs prefixes each part's refs."""
    for ev in events:
        if isinstance(ev, RunEvent | MetricsEvent | RolloutsEvent | RewardsEvent):
            ev.ref = f"{prefix}/{ev.ref}"
            if isinstance(ev, RunEvent) and ev.run.get("parent_ref"):
                ev.run["parent_ref"] = f"{prefix}/{ev.run['parent_ref']}"
        yield ev


def _dispatch(d: Detected, partial_ok: bool, limits: ZipLimits | None) -> Iterator[Event]:
    p = Path(d.path)
    if d.format == "git_lfs_pointer":
        yield _lfs_problem(p)
    elif d.format == "zip":
        yield from _parse_zip(p, partial_ok, limits)
    elif d.format == "multi":
        for i, part in enumerate(d.details.get("parts", [])):
            yield from _prefixed(_dispatch(part, partial_ok, limits), f"{i}:{Path(part.path).name}")
    elif d.format == "inspect_eval":
        yield from inspect_fmt.parse(p, limits=limits)
    elif d.format in FORMATS:
        yield from FORMATS[d.format](p, partial_ok=partial_ok)
    else:
        yield Problem(str(p), None, f"no parser for format {d.format!r}", fatal=True)


def parse(path: str | Path, *, fmt: str | None = None, partial_ok: bool = False,
          limits: ZipLimits | None = None, **_: Any) -> Iterator[Event]:
    """Stream the Events of a file or folder. Bad input becomes Problems; this never raises for it.

    fmt forces a format (a key of FORMATS, or "zip"); partial_ok=True accepts a last JSONL line
    still being written (for `watch`); limits caps zip extraction.
    """
    p = Path(path)
    if not p.exists():
        yield Problem(str(p), None, "no such file or folder", fatal=True)
        return
    try:
        d = Detected(fmt, str(p)) if fmt else detect(p)
    except Exception as e:  # detection reads files: any oddity there is the input's fault
        yield Problem(str(p), None, f"could not inspect input: {type(e).__name__}: {e}", fatal=True)
        return
    if d is None:
        yield Problem(str(p), None, f"unknown format: {_describe(p)}; {_frameworks.EXPECTED}", fatal=True)
        return
    try:
        yield from _dispatch(d, partial_ok, limits)
    except Exception as e:
        yield Problem(str(p), None, f"{d.format} parser stopped: {type(e).__name__}: {e}", fatal=True)
