"""Which files a patch touches, and whether any of them is a test."""

from __future__ import annotations

import re

_DIFF_PATH = re.compile(r"^(?:diff --git a/(\S+) b/(\S+)|\+\+\+ b/(\S+)|--- a/(\S+))", re.M)
_TEST_PATH = re.compile(
    r"(^|/)(tests?|testing|__tests__|spec|specs)(/|$)|(^|/)test_[^/]*$|_tests?\.[^/]+$|\.(test|spec)\.[^/]+$|(^|/)conftest\.py$",
    re.I,
)


def patch_paths(patch: str) -> set[str]:
    paths: set[str] = set()
    for m in _DIFF_PATH.finditer(patch):
        for g in m.groups():
            if g and g != "/dev/null":
                paths.add(g)
    return paths


def patch_touches_tests(patch: str) -> bool:
    """True when a unified diff modifies a test file (a reward-hacking signal for SWE tasks)."""
    if not patch:
        return False
    return any(_TEST_PATH.search(p) for p in patch_paths(patch))
