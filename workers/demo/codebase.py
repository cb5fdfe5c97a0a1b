"""Synthetic mini-codebases with planted security bugs, generated deterministically from a seed.

Each codebase mimics the deeprepo-orchestration tasks: a handful of small Python files, a few of
which contain a planted bug of a known kind. The (path, kind) pairs are the oracle the reward
compares the agent's report against.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class BugKind:
    name: str
    description: str
    snippet: tuple[str, ...]  # lines planted into a file; {v} is replaced by a variable name
    sub_llm_recall: float  # chance a sub-LLM review of the file reports it
    root_recall: float  # chance the root model spots it when reading the file itself
    danger_line: int = -1  # index in `snippet` of the offending line (reported as the bug's line)


BUG_KINDS: dict[str, BugKind] = {
    kind.name: kind
    for kind in (
        BugKind(
            "sql_injection",
            "user input formatted into a SQL query",
            (
                "def find_{v}(cur, name):",
                "    cur.execute(f\"SELECT * FROM {v} WHERE name = '{{name}}'\")",
                "    return cur.fetchall()",
            ),
            0.9,
            0.6,
            danger_line=1,
        ),
        BugKind(
            "md5_password",
            "passwords hashed with MD5",
            (
                "def hash_{v}(password: str) -> str:",
                "    return hashlib.md5(password.encode()).hexdigest()",
            ),
            0.92,
            0.65,
        ),
        BugKind(
            "hardcoded_secret",
            "credential committed in source",
            ('{V}_API_KEY = "sk_live_4f9a1c2e7b3d8a6f0e5c"',),
            0.95,
            0.7,
        ),
        BugKind(
            "eval_input",
            "eval() of request data",
            (
                "def compute_{v}(request):",
                "    return eval(request.args[\"expr\"])",
            ),
            0.9,
            0.6,
        ),
        BugKind(
            "shell_injection",
            "shell command built from user input",
            (
                "def ping_{v}(host):",
                "    return os.system(\"ping -c 1 \" + host)",
            ),
            0.85,
            0.55,
        ),
        BugKind(
            "unsafe_deserialization",
            "pickle.loads on untrusted bytes",
            (
                "def load_{v}(blob: bytes):",
                "    return pickle.loads(blob)",
            ),
            0.8,
            0.5,
        ),
        BugKind(
            "debug_enabled",
            "debug mode left on in production settings",
            ("DEBUG = True  # TODO turn off before release",),
            0.75,
            0.5,
        ),
    )
}

MODULES = (
    "app/__init__.py", "app/routes.py", "app/models.py", "app/db.py", "app/auth.py",
    "app/config.py", "app/tasks.py", "app/cache.py", "app/serializers.py", "app/api/users.py",
    "app/api/reports.py", "app/api/billing.py", "app/admin/views.py", "app/utils/crypto.py",
    "app/utils/shell.py", "app/utils/formatting.py", "scripts/migrate.py", "scripts/backfill.py",
)
NOUNS = ("users", "orders", "invoices", "reports", "sessions", "accounts", "events", "items")

CLEAN_SNIPPETS: tuple[tuple[str, ...], ...] = (
    ("def list_{v}(cur, limit: int = 50):", "    cur.execute(\"SELECT * FROM {v} LIMIT %s\", (limit,))",
     "    return cur.fetchall()"),
    ("def slugify(text: str) -> str:", "    return \"-\".join(text.lower().split())"),
    ("def hash_token(token: str) -> str:", "    return hashlib.sha256(token.encode()).hexdigest()"),
    ("def paginate(items, page: int, size: int = 20):", "    start = (page - 1) * size",
     "    return items[start:start + size]"),
    ("class {V}Serializer:", "    fields = (\"id\", \"name\", \"created_at\")", "",
     "    def dump(self, obj):", "        return {{f: getattr(obj, f) for f in self.fields}}"),
    ("def get_setting(name: str, default=None):", "    return os.environ.get(name, default)"),
    ("def retry(fn, attempts: int = 3):", "    for i in range(attempts):", "        try:",
     "            return fn()", "        except TimeoutError:", "            time.sleep(2 ** i)",
     "    raise TimeoutError(\"gave up\")"),
    ("def cache_key(*parts) -> str:", "    return \":\".join(str(p) for p in parts)"),
)
IMPORTS = ("import hashlib", "import os", "import pickle", "import time")


@dataclass(frozen=True)
class Bug:
    path: str
    kind: str
    line: int


@dataclass(frozen=True)
class Codebase:
    key: str
    seed: int
    files: dict[str, str]  # path -> content, in tree order
    bugs: tuple[Bug, ...]

    @property
    def paths(self) -> list[str]:
        return list(self.files)

    def bugs_in(self, path: str) -> list[Bug]:
        return [b for b in self.bugs if b.path == path]

    def truth(self) -> set[tuple[str, str]]:
        return {(b.path, b.kind) for b in self.bugs}

    def tree(self) -> str:
        lines = [f"{self.key}/"]
        for path in self.files:
            lines.append(f"  {path}  ({len(self.files[path].splitlines())} lines)")
        return "\n".join(lines)


def _render(lines: tuple[str, ...], noun: str) -> list[str]:
    return [line.format(v=noun, V=noun.upper()[:-1] if noun.endswith("s") else noun.upper()) for line in lines]


def generate_codebase(seed: int, key: str | None = None) -> Codebase:
    """A codebase of 5-12 files with 1-4 planted bugs (at most one per file), fixed by `seed`."""
    rng = random.Random(seed)
    n_files = rng.randint(5, 12)
    paths = sorted(rng.sample(MODULES, n_files))
    n_bugs = rng.randint(1, min(4, n_files - 1))
    buggy = set(rng.sample(paths, n_bugs))
    kinds = rng.sample(sorted(BUG_KINDS), n_bugs)
    files: dict[str, str] = {}
    bugs: list[Bug] = []
    kind_iter = iter(kinds)
    for path in paths:
        lines = [f'"""{path.rsplit("/", 1)[-1][:-3].replace("_", " ")} module."""', ""]
        lines += rng.sample(IMPORTS, 2) + [""]
        blocks = [_render(s, rng.choice(NOUNS)) for s in rng.sample(CLEAN_SNIPPETS, rng.randint(1, 3))]
        bug_at = None
        if path in buggy:
            kind = next(kind_iter)
            bug_at = rng.randint(0, len(blocks))
            blocks.insert(bug_at, _render(BUG_KINDS[kind].snippet, rng.choice(NOUNS)))
        for i, block in enumerate(blocks):
            if i == bug_at:
                offset = BUG_KINDS[kind].danger_line % len(block)
                bugs.append(Bug(path, kind, len(lines) + offset + 1))
            lines += block + [""]
        files[path] = "\n".join(lines).rstrip() + "\n"
    return Codebase(key=key or f"toy-repo-{seed:05d}", seed=seed, files=files, bugs=tuple(bugs))


def f1_score(reported: set[tuple[str, str]], truth: set[tuple[str, str]]) -> tuple[float, float, float]:
    """(precision, recall, f1) of reported (path, kind) pairs; an empty report scores 0."""
    if not reported or not truth:
        return 0.0, 0.0, 1.0 if not reported and not truth else 0.0
    tp = len(reported & truth)
    if tp == 0:
        return 0.0, 0.0, 0.0
    precision = tp / len(reported)
    recall = tp / len(truth)
    return precision, recall, 2 * precision * recall / (precision + recall)
