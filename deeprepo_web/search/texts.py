"""The searchable text of each table, as SQL expressions the GIN indexes are built on.

A query must use these exact expressions for Postgres to pick the expression indexes. Bodies are cut
at LIMIT characters: to_tsvector refuses strings over 1 MB, and a body past the blob threshold keeps
only its preview in the row anyway.
"""

from __future__ import annotations

LIMIT = 100_000
CONFIG = "simple"  # no stemming, no stop words: code, paths and error text stay as written


# Paths and dotted names are one token to Postgres's parser ("tests/test_auth.py"): searching a word of
# them would find nothing; and it reads <tags> as HTML, swallowing the text after a <script>. Slashes,
# dots and angle brackets become spaces in the document and in the query alike.
SPLIT_FROM, SPLIT_TO = "/.<>", "    "


def fts(expr: str) -> str:
    """The tsvector of a text expression, as the FTS indexes are built."""
    return f"to_tsvector('{CONFIG}'::regconfig, translate({expr}, '{SPLIT_FROM}', '{SPLIT_TO}'))"


def _cut(expr: str) -> str:
    return f"left({expr}, {LIMIT})"


# Table -> (alias, the combined text). One FTS and one trigram index per table, on the combined text.
TURN = _cut("{a}.content || ' ' || {a}.reasoning")
CALL = _cut("{a}.name || ' ' || coalesce({a}.arguments::text, '') || ' ' || {a}.output")
ROLLOUT = _cut("{a}.final_answer || ' ' || {a}.error")
PROMPT = _cut("coalesce({a}.prompt::text, '')")

# One field alone (for "search only in ..."): a recheck on rows the combined index found.
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
    "prompt": ("prompt", PROMPT),
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
SOURCES = {"turn": TURN, "call": CALL, "rollout": ROLLOUT, "prompt": PROMPT}
TABLES = {"turn": "runs_turn", "call": "runs_toolcall", "rollout": "runs_rollout", "prompt": "runs_example"}


def index_sql() -> list[tuple[str, str]]:
    """(create, drop) statements of the eight indexes, for the migration and the bench."""
    out = []
    for source, expr in SOURCES.items():
        table = TABLES[source]
        bare = expr.format(a=table)
        out.append((
            f"CREATE INDEX IF NOT EXISTS search_{source}_fts ON {table} "
            f"USING gin ({fts(bare)})",
            f"DROP INDEX IF EXISTS search_{source}_fts",
        ))
        out.append((
            f"CREATE INDEX IF NOT EXISTS search_{source}_trgm ON {table} USING gin (({bare}) gin_trgm_ops)",
            f"DROP INDEX IF EXISTS search_{source}_trgm",
        ))
    return out
