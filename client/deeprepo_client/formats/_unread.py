"""Files a folder's walk did not read, reported rather than dropped.

A framework's output folder holds more than one layout (SkyRL's `eval_only/` beside its
`global_step_N_evals/`, verl dumps one folder deeper, older ART files): whatever a parser's walk
leaves behind is named in a Problem, so an import never looks complete while part of it was skipped.
Only files that look like data are named (checkpoints, logs and configs sit in the same folders and
are not runs); watch mode (partial_ok) says nothing, since a file being written is left on purpose.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from ..records import Problem

DATA_SUFFIXES = frozenset({".jsonl", ".json", ".parquet", ".csv", ".yaml", ".db", ".sqlite"})
MAX_NAMED = 20  # named one by one; the rest are counted in one line
MAX_WALK = 5000


def unread(root: Path, read: Iterable[Path], what: str, *, partial_ok: bool = False) -> Iterator[Problem]:
    """A Problem per data file under `root` that is not in `read` (at most MAX_NAMED, then a count)."""
    if partial_ok or not root.is_dir():
        return
    done = {p.resolve() for p in read}
    left: list[Path] = []
    seen = 0
    stack = [root]
    while stack and seen < MAX_WALK:
        for child in sorted(stack.pop().iterdir()):
            seen += 1
            if child.name.startswith((".", "__MACOSX")):
                continue
            if child.is_dir():
                stack.append(child)
            elif child.suffix in DATA_SUFFIXES and child.resolve() not in done:
                left.append(child)
    for f in left[:MAX_NAMED]:
        yield Problem(str(f), None, f"not read: not part of {what}")
    if len(left) > MAX_NAMED:
        yield Problem(str(root), None, f"{len(left) - MAX_NAMED} more files not read (not part of {what})")
