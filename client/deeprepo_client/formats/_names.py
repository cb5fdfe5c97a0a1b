"""Run names from what the files say, when the folder they sit in says nothing.

Folders are often named `out`, `outputs`, `trl` or a hash (an upload's content hash, a run id):
such a name is replaced by the environment, model, date or instance found in the files. Only the
shown name changes; parsers keep their external ids, so a re-import still finds the same run.
"""

from __future__ import annotations

import re
from pathlib import Path

# Folder names that tell nothing about the run in them.
_GENERIC = {
    "", ".", "out", "outs", "output", "outputs", "result", "results", "run", "runs", "tmp", "temp",
    "data", "eval", "evals", "log", "logs", "checkpoints", "trl", "grpo", "swe_agent", "swe-agent",
    "sweagent", "trajectories", "trajs", "traj", "preds", "upload", "uploads", "files", "export",
    "exports", "samples", "completions", "prime-rl", "prime_rl", "openhands", "inspect", "verifiers",
}
_HASHLIKE = re.compile(
    r"^[0-9a-f]{8,}$"  # hex digests, short or long
    r"|^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"  # uuids
    r"|^(?=[a-z0-9]*\d)(?=[a-z0-9]*[a-z])[a-z0-9]{16,}$",  # random ids (cuid-like)
    re.I,
)
_CHECKPOINT = re.compile(r"^checkpoint-\d+$")


def informative(name: str | None) -> bool:
    """Whether a folder name says something about a run (not `out`, `trl`, a hash, checkpoint-N)."""
    n = (name or "").strip()
    return (bool(n) and not n.startswith(".") and n.lower() not in _GENERIC and not _HASHLIKE.match(n)
            and not _CHECKPOINT.match(n))


def informative_folder(path: Path, levels: int = 3) -> str | None:
    """The nearest of `path` and its parents (up to `levels`) with an informative name."""
    for p in [path, *list(path.parents)[: levels - 1]]:
        if informative(p.name):
            return p.name
    return None


def short_model(model: str | None) -> str:
    """`qwen/qwen3-30b-a3b` -> `qwen3-30b-a3b`; provider prefixes add length, not meaning."""
    return (model or "").strip().rstrip("/").rsplit("/", 1)[-1]


def joined(*parts: object, sep: str = " · ") -> str:
    """The non-empty parts, each once, in order."""
    seen: list[str] = []
    for part in parts:
        text = str(part).strip() if part is not None else ""
        if text and text not in seen:
            seen.append(text)
    return sep.join(seen)[:200]
