"""Error signatures of a run: tool errors and final errors with numbers, paths and ids stripped,
grouped, counted per step, with example rollouts. The "most repeated error" of compare, run-wide.

Grouped in SQL (one pass over the run's rollout rows, nothing loaded row by row) by the signatures
ingest keeps on each rollout row (`analysis.behaviour.error_signature`: the last line of the error with
hex and long ids, paths, quoted strings and numbers replaced by placeholders): each failed call's in
`tool_errors`, the final error's in `error_sig`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deeprepo_web.replica.router import read_cursor
from deeprepo_web.runs.models import Run
from deeprepo_web.search.chart import Bar, bar, step_groups, steps_label

TOP = 50


# Every error of the run with its signature, in one pass over its rollouts (a pass per kind took 735 of
# 1,790 ms at 666,667 rollouts): each failed tool call's, then the final error's, as ingest stored them
# (normalising them here on each view: 1.1-1.5 s against 0.55-0.85 s at 300,000 rollouts whose error
# lines all differ, docs/scale.md); signatures compare byte for byte (COLLATE "C": grouping under the
# locale's collation is slower). The top signatures are numbered (g), and their steps and examples come
# from one pass over their errors grouped by that number: asked per signature, each read every error of
# the run again (50 signatures at 300,000 rollouts: 450 ms against 150).
_SQL = f"""
WITH errs AS MATERIALIZED (
    SELECT x.kind, x.tool, x.sig, r.step, r.id AS rollout_id, x.turn_index
    FROM runs_rollout r CROSS JOIN LATERAL (
        SELECT 'tool' AS kind, e->>0 AS tool, coalesce(e->>3, '') COLLATE "C" AS sig, (e->>1)::int AS turn_index
        FROM jsonb_array_elements(r.tool_errors) e
        UNION ALL
        SELECT 'final', '', r.error_sig COLLATE "C", NULL WHERE r.error <> ''
    ) x
    WHERE r.run_id = %s AND (r.tool_errors <> '[]' OR r.error <> '')
), top AS (
    SELECT row_number() OVER (ORDER BY count(*) DESC, sig) AS g, kind, tool, sig, count(*) AS n,
           count(DISTINCT rollout_id) AS rollouts
    FROM errs GROUP BY kind, tool, sig ORDER BY n DESC, sig LIMIT {TOP}
), hits AS (
    SELECT t.g, e.step, e.rollout_id, e.turn_index
    FROM errs e JOIN top t ON e.kind = t.kind AND e.tool = t.tool AND e.sig = t.sig
), steps AS (
    SELECT g, array_agg(step || ':' || c) AS steps
    FROM (SELECT g, step, count(*) AS c FROM hits WHERE step IS NOT NULL GROUP BY g, step) x GROUP BY g
), examples AS (
    -- the newest 3 rollouts, each with the turn of its first error of this signature
    SELECT g, array_agg(rollout_id || ':' || coalesce(turn_index, -1) ORDER BY rollout_id DESC) AS examples
    FROM (SELECT g, rollout_id, min(turn_index) AS turn_index,
                 row_number() OVER (PARTITION BY g ORDER BY rollout_id DESC) AS k
          FROM hits GROUP BY g, rollout_id) y
    WHERE k <= 3 GROUP BY g
)
SELECT t.kind, t.tool, t.sig, t.n, t.rollouts, s.steps, x.examples
FROM top t LEFT JOIN steps s USING (g) LEFT JOIN examples x USING (g) ORDER BY t.g
"""


@dataclass
class Signature:
    kind: str  # "tool" or "final"
    tool: str
    text: str
    count: int
    rollouts: int
    per_step: dict[int, int]
    examples: list[tuple[int, int | None]]  # (rollout id, turn index)
    bars: list[Bar] = field(default_factory=list)


def _bars(per_step: dict[int, int], lo: int, hi: int) -> list[Bar]:
    """Bars over the run's step range lo..hi (every signature on the same scale of steps), each as
    high as its count against the signature's highest."""
    groups = [(g, sum(per_step[s] for s in members)) for g, members in step_groups(sorted(per_step), lo, hi)]
    top = max((n for _, n in groups), default=1)
    return [bar(g, n / top, f"{steps_label(g)}: {n}") for g, n in groups]


def error_signatures(*, run: Run) -> tuple[list[Signature], tuple[int, int] | None]:
    """The run's most repeated error signatures, and its step range (for the bars)."""
    with read_cursor() as cur:
        cur.execute("SET LOCAL statement_timeout = 20000")
        cur.execute(_SQL, [run.pk])
        rows = cur.fetchall()
    sigs = []
    for kind, tool, text, n, rollouts, steps, examples in rows:
        per_step = {int(s): int(c) for s, c in (x.split(":") for x in steps or [])}
        ex = [(int(r), None if int(i) < 0 else int(i)) for r, i in (x.split(":") for x in examples or [])]
        sigs.append(Signature(kind, tool, text, n, rollouts, per_step, ex))
    steps_all = [s for sig in sigs for s in sig.per_step]
    span = (min(steps_all), max(steps_all)) if steps_all else None
    if span:
        for sig in sigs:
            sig.bars = _bars(sig.per_step, *span)
    return sigs, span
