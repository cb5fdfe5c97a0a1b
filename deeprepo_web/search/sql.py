"""SQL pieces of a search over search_doc: the match on a rollout's (or prompt's) document, the
recheck that finds which of a page's turns, calls and answers hold it, the rollout filters.
Every value goes in as a parameter; only our own constants are formatted in."""

from __future__ import annotations

import json
from typing import Any

from deeprepo_web.search.spec import SearchSpec
from deeprepo_web.search.texts import BODIES, CONFIG, FIELDS, SPLIT_FROM, SPLIT_TO, TABLES, fts

Sql = tuple[str, list[Any]]
SOURCES = list(TABLES)


def like_pattern(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _query(spec: SearchSpec) -> str:
    return f"websearch_to_tsquery('{CONFIG}'::regconfig, %s)"


def _words(spec: SearchSpec) -> str:
    return spec.q.translate(str.maketrans(SPLIT_FROM, SPLIT_TO))


def doc_match(spec: SearchSpec) -> Sql:
    """The match on search_doc `d` (what its GIN indexes serve: fts(d.body) is search_doc_tsv's expression)."""
    return _row_match(spec, "d.body")


def _row_match(spec: SearchSpec, text: str) -> Sql:
    """The match on a text expression: a document's body, or one text of a source row (the recheck)."""
    if spec.mode == "words":
        return f"{fts(text)} @@ {_query(spec)}", [_words(spec)]
    if spec.mode == "substring":
        return f"{text} ILIKE %s", [like_pattern(spec.q)]
    return f"{text} ~* %s", [spec.q]


def _field_match(spec: SearchSpec, alias: str) -> Sql:
    """With "only in <field>": the match on that field of the source row `alias`."""
    _, expr = FIELDS[spec.field]
    cond, params = _row_match(spec, expr.format(a=alias))
    if spec.field == "tool_error":
        cond += f" AND {alias}.is_error"
    return cond, params


def doc_sources(spec: SearchSpec) -> list[str]:
    """The documents a search reads: a rollout's (its turns, calls, answer) and the example prompts'."""
    if not spec.field:
        return ["rollout", "prompt"]
    return ["prompt" if FIELDS[spec.field][0] == "prompt" else "rollout"]


def _in_rollout(spec: SearchSpec, rollout: str) -> Sql:
    """With a field of a turn, call or rollout: some row of rollout `rollout` matches in that field."""
    if not spec.field or FIELDS[spec.field][0] == "prompt":
        return "", []
    source = FIELDS[spec.field][0]
    cond, params = _field_match(spec, "f")
    key = "id" if source == "rollout" else "rollout_id"
    return f" AND EXISTS (SELECT 1 FROM {TABLES[source]} f WHERE f.{key} = {rollout} AND {cond})", params


def _prompt_field(spec: SearchSpec) -> Sql:
    if spec.field != "prompt":
        return "", []
    cond, params = _field_match(spec, "f")
    return f" AND EXISTS (SELECT 1 FROM runs_example f WHERE f.id = d.obj AND {cond})", params


def matched_sql(spec: SearchSpec, *, run_ids: list[int], doc_runs: str) -> Sql:
    """Rows (rollout_id): every rollout whose document matches (once per matching part), or whose
    example's prompt does. `doc_runs`: how the documents are found and their run tested —
    "index": the run's own documents through search_doc_run, each one tested (one small run and a common
    text, selectors._doc_runs), and its prompts through the examples of its rollouts; "filter": the GIN
    indexes find the matching documents, the run tested on each (many runs: through the index, the planner
    walked every document of the runs and tested each body, >20 s for a common word at 1,000 runs); ""
    the same, the run not tested at all (the caller joins runs_rollout).

    `d.src || ''`, `d.obj + 0`: a source and an example no index holds, so the documents come from the
    text's index. Read by source through the primary key, each document's tsvector was computed when the
    planner took the text for a common one (selectors._planned)."""
    match, params = doc_match(spec)
    parts: list[str] = []
    out: list[Any] = []
    sources = doc_sources(spec)
    if "rollout" in sources:
        # `+ 0`: an expression no index holds, so the run is tested on the documents the match found.
        column = {"index": "d.run_id", "filter": "d.run_id + 0"}.get(doc_runs)
        near, near_params = (f" AND {column} = ANY(%s)", [run_ids]) if column else ("", [])
        # Each of the run's documents is tested: those without every word as a substring cost no tsvector
        # (3,000 documents of 8 kB: 3.4 s computed, 0.25 s with this first; docs/scale.md).
        held, held_params = _words_held(spec) if doc_runs == "index" else ("", [])
        field, field_params = _in_rollout(spec, "d.obj")
        parts.append(f"SELECT d.obj FROM search_doc d WHERE d.src || '' = 'rollout'{near} AND {held}{match}{field}")
        out += [*near_params, *held_params, *params, *field_params]
    if "prompt" in sources:
        field, field_params = _prompt_field(spec)
        if doc_runs == "index":
            # The run's examples, each one's prompt tested: a common text's prompts in the whole table were
            # read through the trigram index and each rechecked (100,000 candidates for `db.py:42` at 10^5).
            # ARRAY(...): the examples matched once (an InitPlan), not again for each rollout of the run.
            parts.append("SELECT ro.id FROM runs_rollout ro WHERE ro.run_id = ANY(%s) AND ro.example_id = ANY(ARRAY("
                         "SELECT e.id FROM (SELECT DISTINCT x.example_id FROM runs_rollout x WHERE x.run_id = ANY(%s)) "
                         "e(id) CROSS JOIN LATERAL (SELECT 1 FROM search_doc d WHERE d.src = 'prompt' AND d.obj = e.id "
                         f"AND {match}{field} LIMIT 1) m))")
            out += [run_ids, run_ids, *params, *field_params]
        else:
            parts.append("SELECT ro.id FROM search_doc d JOIN runs_rollout ro ON ro.example_id = d.obj + 0 "
                         f"WHERE d.src || '' = 'prompt' AND ro.run_id = ANY(%s) AND {match}{field}")
            out += [run_ids, *params, *field_params]
    return " UNION ALL ".join(parts), out


# LIKE patterns of a tsquery's lexemes, read from its text ('it''s' <-> 'done'); none when it has an
# `|` or `!` (a lexeme it may do without) or a backslash (escaped differently there).
_HELD = (r"SELECT '%%' || replace(replace(replace(m[1], '''''', ''''), '%%', '\%%'), '_', '\_') || '%%' "
         r"FROM {query} q, regexp_matches(q::text, '''((?:[^'']|'''')*)''', 'g') m WHERE q::text !~ '[|!\\]'")


def _words_held(spec: SearchSpec) -> Sql:
    """For a words search that needs every one of its words (no `or`, no `-word`): the document holds
    each of them as a substring, a test ~10× cheaper than its tsvector (at 3·10^6 rollouts, probing 4,000
    rollouts of 8 kB that lack the word took 2.7 s, 0.25 s with this first). A lexeme is a lowercased
    piece of the translated text, and translate only turns /.<> into spaces, which no lexeme holds; with
    no pattern, ILIKE ALL of an empty array is true."""
    if spec.mode != "words":
        return "", []
    return f"d.body ILIKE ALL (ARRAY({_HELD.format(query=_query(spec))})) AND ", [_words(spec)]


def rollout_probe(spec: SearchSpec) -> Sql:
    """How many of the outer query's rollout `r`'s documents match (its own, its example's prompt): a
    LATERAL subquery for the walk through the rollouts newest first, the fast way when the text is
    common. An aggregate, not EXISTS: the planner turned `EXISTS (...) OR EXISTS (...)` into a hashed
    subplan that tested every document of the table first (148 s for a word in every rollout at 10^5)."""
    held, held_params = _words_held(spec)
    match, params = doc_match(spec)
    match, params = held + match, held_params + params
    parts: list[str] = []
    out: list[Any] = []
    sources = doc_sources(spec)
    if "rollout" in sources:
        field, field_params = _in_rollout(spec, "r.id")
        parts.append(f"SELECT 1 FROM search_doc d WHERE d.src = 'rollout' AND d.obj = r.id AND {match}{field}")
        out += [*params, *field_params]
    if "prompt" in sources:
        field, field_params = _prompt_field(spec)
        parts.append(f"SELECT 1 FROM search_doc d WHERE d.src = 'prompt' AND d.obj = r.example_id AND {match}{field}")
        out += [*params, *field_params]
    return f"SELECT count(*) AS n FROM ({' UNION ALL '.join(parts)}) m", out


def located_sql(spec: SearchSpec, rollout_ids: list[int]) -> Sql:
    """Rows (rollout_id, turn_index, src, obj): the turns, calls, answers and prompts of these
    rollouts (a page's) that hold the match themselves, each rechecked on its source row."""
    parts: list[str] = []
    out: list[Any] = []
    sources = [FIELDS[spec.field][0]] if spec.field else SOURCES
    for src in sources:
        if spec.field:
            cond, params = _field_match(spec, "x")
        else:
            cond, params = _row_match(spec, BODIES[src].format(a="x"))
        if src == "turn":
            parts.append("SELECT x.rollout_id, x.index, 'turn', x.id FROM runs_turn x "
                         f"WHERE x.rollout_id = ANY(%s) AND {cond}")
        elif src == "call":
            parts.append("SELECT x.rollout_id, x.turn_index, 'call', x.id FROM runs_toolcall x "
                         f"WHERE x.rollout_id = ANY(%s) AND {cond}")
        elif src == "rollout":
            parts.append(f"SELECT x.id, NULL::int, 'rollout', x.id FROM runs_rollout x WHERE x.id = ANY(%s) AND {cond}")
        else:
            parts.append("SELECT r.id, NULL::int, 'prompt', x.id FROM runs_rollout r JOIN runs_example x "
                         f"ON x.id = r.example_id WHERE r.id = ANY(%s) AND {cond}")
        out += [rollout_ids, *params]
    return " UNION ALL ".join(parts), out


def hits_estimate(spec: SearchSpec) -> Sql:
    """The planner's guess of how many bodies a words search matches (EXPLAIN, nothing read), from the
    statistics of the words index (its most common lexemes)."""
    match, params = doc_match(spec)
    return (f"EXPLAIN (FORMAT JSON) SELECT 1 FROM search_doc d WHERE d.src = ANY(%s) AND {match}",
            [doc_sources(spec), *params])


def words_listed(spec: SearchSpec) -> Sql:
    """Whether every word of a words search is one of the words index's most common lexemes (its
    statistics). Only then is the planner's estimate a count: for any other word Postgres guesses a
    share of the documents (0.5 %, or half the rarest listed word's), however rare or absent it is."""
    return ("SELECT coalesce(bool_and(w = ANY(s.most_common_elems::text::text[])), false) "
            f"FROM unnest(tsvector_to_array({fts('%s')})) w "
            "JOIN pg_stats s ON s.schemaname = current_schema() AND s.tablename = 'search_doc_tsv'",
            [_words(spec)])


def hits_capped(spec: SearchSpec, cap: int) -> Sql:
    """How many bodies match, counting no further than `cap`."""
    match, params = doc_match(spec)
    return (f"SELECT count(*) FROM (SELECT 1 FROM search_doc d WHERE d.src = ANY(%s) AND {match} "
            f"LIMIT {int(cap)}) x", [doc_sources(spec), *params])


def rollout_filters(spec: SearchSpec, *, run_ids: list[int], label_id: int | None, id_range: bool = True) -> Sql:
    """Conditions on `r` (runs_rollout): the run set and the filters around the search. `id_range`: one
    run's rollouts also by their id range, for scans of runs_rollout newest first."""
    conds, params = rollout_conditions(spec, label_id=label_id)
    runs = ["r.run_id = ANY(%s)"]
    run_params: list[Any] = [run_ids]
    if len(run_ids) == 1 and id_range:
        # One run: its rollouts' id range (both ends read from the (run, id) index) bounds the newest-first
        # scans. Without it Postgres walked the primary key down from the newest rollout of the table,
        # through every later run's: 340-450 ms for a tool or reward filter on the oldest of three runs at
        # 2*10^6 rollouts, 0.1-0.3 ms with it (docs/scale.md).
        runs.append("r.id BETWEEN (SELECT min(id) FROM runs_rollout WHERE run_id = %s) "
                    "AND (SELECT max(id) FROM runs_rollout WHERE run_id = %s)")
        run_params += [run_ids[0], run_ids[0]]
    return " AND ".join([*runs, *conds]), [*run_params, *params]


def rollout_conditions(spec: SearchSpec, *, label_id: int | None) -> tuple[list[str], list[Any]]:
    """The filters on `r` beyond its run (none: a rollout is kept by its run alone)."""
    conds: list[str] = []
    params: list[Any] = []
    for column, op, value in (("step", ">=", spec.step_min), ("step", "<=", spec.step_max),
                              ("reward", ">=", spec.reward_min), ("reward", "<=", spec.reward_max)):
        if value is not None:
            conds.append(f"r.{column} {op} %s")
            params.append(value)
    if spec.stop:
        conds.append("r.stop_condition = %s")
        params.append(spec.stop)
    if spec.tool:
        conds.append("r.tools @> %s::jsonb")  # the rollout's tool names, kept on its row (and indexed)
        params.append(json.dumps([spec.tool]))
    if label_id is not None:
        conds.append("EXISTS (SELECT 1 FROM labels_mark lm WHERE lm.rollout_id = r.id AND lm.label_id = %s "
                     "AND lm.status <> 'rejected')")
        params.append(label_id)
    return conds, params
