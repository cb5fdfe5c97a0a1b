"""The searchable text of each source table, and how it becomes a tsvector.

A rollout's document is its pieces joined by newlines: each turn (content, reasoning) and its tool
calls (name, arguments, output) in turn order, then the rollout's answer and error. Each piece is cut
at LIMIT characters (a body past the blob threshold keeps only its preview in the row anyway), and a
rollout longer than PART_CHARS becomes several documents (parts), cut between pieces: to_tsvector
refuses more than 1 MB of lexemes and keeps word positions up to 16,383 only (a phrase further on
would never match).
"""

from __future__ import annotations

LIMIT = 100_000
# A part starts at the first piece that begins at or past a multiple of this (so a part holds at most
# PART_CHARS + LIMIT characters; ~50,000 characters of text are ~8,000-10,000 words).
PART_CHARS = 50_000
CONFIG = "simple"  # no stemming, no stop words: code, paths and error text stay as written
# Paths and dotted names are one token to Postgres's parser ("tests/test_auth.py"): searching a word of
# them would find nothing; and it reads <tags> as HTML, swallowing the text after a <script>. Slashes,
# dots and angle brackets become spaces in the document and in the query alike.
SPLIT_FROM, SPLIT_TO = "/.<>", "    "


def fts(expr: str) -> str:
    """The tsvector of a text expression."""
    return f"to_tsvector('{CONFIG}'::regconfig, translate({expr}, '{SPLIT_FROM}', '{SPLIT_TO}'))"


def _cut(expr: str) -> str:
    return f"left({expr}, {LIMIT})"


# Source -> the body of one row ({a} is the table's alias).
BODIES = {
    "turn": _cut("{a}.content || ' ' || {a}.reasoning"),
    "call": _cut("{a}.name || ' ' || coalesce({a}.arguments::text, '') || ' ' || {a}.output"),
    "rollout": _cut("{a}.final_answer || ' ' || {a}.error"),
    "prompt": _cut("coalesce({a}.prompt::text, '')"),
}
TABLES = {"turn": "runs_turn", "call": "runs_toolcall", "rollout": "runs_rollout", "prompt": "runs_example"}
# What the indexer reads by id (a rollout's turns and calls commit with it; `runs.ingest.replace`,
# the one path that rewrites them later, rebuilds its document at once: search.signals).
INDEXED = {"rollout": "runs_rollout", "prompt": "runs_example"}

# One field alone (for "search only in ..."): a recheck on the source row of a body that matched.
FIELDS: dict[str, tuple[str, str]] = {
    # field: (source, expression)
    "content": ("turn", _cut("{a}.content")),
    "reasoning": ("turn", _cut("{a}.reasoning")),
    "tool_name": ("call", "{a}.name"),
    "tool_args": ("call", _cut("coalesce({a}.arguments::text, '')")),
    "tool_output": ("call", _cut("{a}.output")),
    "tool_error": ("call", _cut("{a}.output")),  # plus is_error
    "answer": ("rollout", _cut("{a}.final_answer")),
    "error": ("rollout", _cut("{a}.error")),
    "prompt": ("prompt", _cut("coalesce({a}.prompt::text, '')")),
}
FIELD_LABELS = {
    "": "everywhere",
    "content": "turn content",
    "reasoning": "reasoning",
    "tool_name": "tool name",
    "tool_args": "tool arguments",
    "tool_output": "tool output",
    "tool_error": "tool errors",
    "answer": "final answers",
    "error": "rollout errors",
    "prompt": "example prompts",
}
