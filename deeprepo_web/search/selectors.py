"""Search reads: one page of matching rollouts with snippets, counts per run and step, and every
matching rollout id for bulk labels and exports (a server-side cursor, never a list in memory).

A page's SQL reads where the replica router would send the ORM (`replica.router.read_alias`): the
replica inside a page request while it is alive and close behind, else the primary. The id stream of
bulk labels and exports stays on the primary (a POST, or a server-side cursor behind PgBouncer)."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from django.core.cache import cache
from django.db import DataError, connections, transaction
from django.db.utils import OperationalError
from django.utils.safestring import SafeString

from deeprepo_web.accounts.models import Project
from deeprepo_web.front.paging import KeysetPage, cursor_decode, cursor_encode, id_key, page_around
from deeprepo_web.labels.models import Label
from deeprepo_web.ops.pg import streaming_cursor
from deeprepo_web.replica.health import replica_state
from deeprepo_web.replica.router import read_alias
from deeprepo_web.runs.models import Example, Rollout, Run, ToolCall, Turn
from deeprepo_web.search import sql as S
from deeprepo_web.search.snippets import find, pattern_for, snippet_html, snippet_text
from deeprepo_web.search.spec import SearchSpec

PAGE_TIMEOUT_MS = 10_000
COUNTS_TIMEOUT_MS = 20_000
SNIPPETS_PER_ROLLOUT = 3

log = logging.getLogger(__name__)


class SearchFailed(Exception):
    """A search Postgres refused (a bad regular expression) or gave up on (too slow): one line for the user."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class SearchTooCommon(SearchFailed):
    """A search of every run whose text is in so many rollouts that counting them per run and step
    would read nearly the whole search table."""


RUN_FIELDS = ("id", "public_id", "name", "project_id", "kind")


@dataclass
class Scope:
    """The runs a search reads (their ids: a project may have thousands, and a page shows the runs of
    its 50 rollouts only), the label filter, and whether nothing can match."""

    project: Project
    run_ids: list[int]
    label_id: int | None
    empty: bool = False  # a filter named something that does not exist: nothing can match
    _runs: dict[int, Run] = field(default_factory=dict, repr=False)

    @cached_property
    def one_small_run(self) -> bool:
        """Whether the scope is one run of fewer than BIG_RUN rollouts (an index-only count, once)."""
        return len(self.run_ids) == 1 and Rollout.objects.filter(run_id=self.run_ids[0])[:BIG_RUN].count() < BIG_RUN

    def runs_for(self, ids: Iterable[int]) -> dict[int, Run]:
        """These runs of the scope (loaded once), by id."""
        missing = set(ids) - self._runs.keys()
        if missing:
            self._runs.update(Run.objects.filter(pk__in=missing).only(*RUN_FIELDS).in_bulk())
        return {i: self._runs[i] for i in ids if i in self._runs}

    @property
    def runs(self) -> dict[int, Run]:
        """Every run of the scope, by id (the counts per run name them all)."""
        return self.runs_for(self.run_ids)


@dataclass
class Snippet:
    where: str
    turn_index: int | None
    html: SafeString


@dataclass
class Result:
    rollout: Rollout
    hits: int
    snippets: list[Snippet] = field(default_factory=list)

    @property
    def turn_index(self) -> int | None:
        return next((s.turn_index for s in self.snippets if s.turn_index is not None), None)


def search_scope(*, project: Project, spec: SearchSpec) -> Scope:
    runs = Run.objects.filter(project=project)
    if spec.run:
        runs = runs.filter(public_id=spec.run)
    # Ids only: building a model per run cost a page ~25 ms at 1,000 runs (docs/scale.md).
    run_ids = list(runs.values_list("id", flat=True))
    label_id = None
    empty = not run_ids
    if spec.run and not run_ids:
        spec.errors.append(f"run: no run {spec.run!r} in this project")
    if spec.label:
        label_id = Label.objects.filter(project=project, name=spec.label).values_list("id", flat=True).first()
        if label_id is None:
            spec.errors.append(f"label: no label named {spec.label!r} in this project")
            empty = True
    return Scope(project=project, run_ids=run_ids, label_id=label_id, empty=empty)


# A run past this many rollouts has its matching documents found by the text's index alone, not by the
# run's documents: the planner reads the run's documents and computes each one's tsvector (~70 µs) when
# the text is in most of them, and cannot be told that the words index would spare that (it costs the
# recheck either way). 20,000 rollouts cost that way ~1.4 s at most; the chart of a run of 300,000 took
# over 20 s for a word in each of its documents, 1.5-2.1 s through the index (docs/scale.md).
BIG_RUN = 20_000


def _index_way(spec: SearchSpec, walk: bool) -> bool:
    """Whether the statement for `spec` collects every matching document first (not the walk, nor a search
    by filters alone)."""
    return bool(spec.q) and not walk


# How a search statement is planned (`_planned`): as Postgres likes, the index way's bitmap scans only, or
# those with the hits joined to the rollouts by hashing both sides.
Plan = Literal["", "bitmaps", "hashed"]


def _plan(scope: Scope, spec: SearchSpec, walk: bool) -> Plan:
    """The index way takes bitmap scans only (`_planned`); hashed where one run is searched under filters
    for a text that many documents hold (`_walk`). The planner guesses such hits at ~0.5 % of what they are
    (the source test no index serves), and looked each one's rollout up: 236,170 lookups, 1.5 s of 2.8 s
    for `FileNotFoundError` with a tool in a run of 250,000 rollouts, where hashing the run's kept rollouts
    (0.2 s) takes 1.0-1.4 s in all (docs/scale.md)."""
    if not _index_way(spec, walk):
        return ""
    if (len(scope.run_ids) == 1 and S.rollout_conditions(spec, label_id=scope.label_id)[0]
            and _walk(spec)):
        return "hashed"
    return "bitmaps"


def _matches_sql(scope: Scope, spec: SearchSpec, *, ordered: bool = True, walk: bool = False,
                 beyond: int | None = None, backward: bool = False) -> S.Sql:
    """(rollout_id) of every matching rollout, newest first: its document (or its example's prompt)
    matches, and with "only in <field>" one of its rows matches in that field.

    `walk`: go through the filtered rollouts newest first and test each one's document (by its key),
    stopping at the page's end: fast when many rollouts match. Otherwise the GIN indexes find every
    matching document first: fast when few do."""
    # The index way starts from the matching documents: a run's id range bounds nothing there, and its two
    # probes would be sequential scans without plain index scans (_planned).
    where, params = S.rollout_filters(spec, run_ids=scope.run_ids, label_id=scope.label_id,
                                      id_range=not _index_way(spec, walk))
    if beyond is not None:  # a cursor: the rollouts older (or, going back, newer) than its id
        where, params = f"{where} AND r.id {'>' if backward else '<'} %s", [*params, beyond]
    way = "ASC" if backward else "DESC"
    order = f" ORDER BY r.id {way}" if ordered else ""
    if not spec.q:
        return f"SELECT r.id FROM runs_rollout r WHERE {where}{order}", params
    if walk:
        probe, probe_params = S.rollout_probe(spec)
        return (f"SELECT r.id FROM runs_rollout r CROSS JOIN LATERAL ({probe}) h WHERE {where} AND h.n > 0{order}",
                probe_params + params)
    if not S.rollout_conditions(spec, label_id=scope.label_id)[0]:
        # The runs are all that keeps a rollout: tested on the matching documents themselves, with no probe
        # of runs_rollout per hit (~150 of 265 ms for a text in 16,000 rollouts at 10^7, docs/scale.md).
        hits, hit_params = S.matched_sql(spec, run_ids=scope.run_ids, doc_runs=_doc_runs(scope, spec, "filter"))
        bound, bound_params = ("", []) if beyond is None else (f" WHERE x.id {'>' if backward else '<'} %s", [beyond])
        order = f" ORDER BY x.id {way}" if ordered else ""
        return f"SELECT DISTINCT x.id FROM ({hits}) x(id){bound}{order}", hit_params + bound_params
    # Filters on the rollout read runs_rollout for each hit anyway, and keep its runs there too.
    hits, hit_params = S.matched_sql(spec, run_ids=scope.run_ids, doc_runs=_doc_runs(scope, spec, ""))
    return f"SELECT r.id FROM runs_rollout r WHERE r.id IN ({hits}) AND {where}{order}", hit_params + params


def _doc_runs(scope: Scope, spec: SearchSpec, otherwise: str) -> str:
    """How the index way finds the documents of a search (sql.matched_sql's `doc_runs`). One small run's
    own documents, each tested, only for a text that many documents hold (`_walk`): the project's hits
    would be more. A rarer text is found through its index in the whole table (fewer than WALK_AFTER_HITS
    documents), its run tested on each. The planner took the run's documents for every text, and computed
    each one's tsvector: a rare word in a run of 3,000 rollouts of 8 kB took 3.3 s, for the list and again
    for its chart (docs/scale.md, "A rare text in one run")."""
    return "index" if scope.one_small_run and _walk(spec) else otherwise


# Past this many hits, walking the rollouts newest first finds a page sooner than collecting every hit.
WALK_AFTER_HITS = 20_000


# The hit count that decides gets this long: a count still running then means many hits.
COUNT_MS = 150
# How long the way the count picked may take before the other way is tried.
GUESS_MS = 3000


# How long a walk-or-count decision is reused (seconds).
WALK_TTL = 60


# Memory for a search statement's bitmaps. With the default 4 MB, a bitmap of every document holding a
# common word (283,208 of 602,000 at 6*10^5 rollouts, 97,541 heap pages) turned a third of its pages
# lossy, and Postgres recomputed the tsvector of every document on them: 28.5 s, against 0.65 s with an
# exact bitmap (docs/scale.md). Taken only by the statements that build such a bitmap.
BITMAP_MEMORY = "64MB"


# An EXPLAIN plans and reads nothing: under a millisecond, however big the table.
ESTIMATE_MS = 100


def _first_or(sql: S.Sql, timeout_ms: int, on_timeout: Any) -> Any:
    """The first value of a deciding query, or `on_timeout` when it runs past `timeout_ms` (our own
    statement timeout: the answer the query could only have given slowly)."""
    try:
        return _run(sql[0], sql[1], timeout_ms)[0][0]
    except SearchFailed as exc:
        if not exc.timed_out:
            raise
        return on_timeout


def _estimated_hits(spec: SearchSpec) -> float:
    """The planner's estimate of the matching bodies; 0 (no opinion) if even planning ran out of time."""
    plan = _first_or(S.hits_estimate(spec), ESTIMATE_MS, None)
    if plan is None:
        return 0.0
    return float((json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]["Plan Rows"])


def _estimated_many(spec: SearchSpec) -> bool:
    """Whether the planner knows that many bodies match. Its guess for a word its statistics do not
    list grows with the table (0.5 % of the documents): at 10^6 rollouts a word found nowhere was
    estimated at 61,972 hits and walked through every rollout until GUESS_MS (3 s, docs/scale.md).

    A substring or regex is never known: its estimate comes from the body's histogram, and ANALYZE
    leaves every value over 1 kB out of it, so it describes prompts and short rollouts only. At 3·10^6
    rollouts `/secret.key` was estimated at 24,629 documents and held by 483: the walk it chose ran
    for GUESS_MS before the index answered. Counting costs a common text at most COUNT_MS."""
    if spec.mode != "words" or _estimated_hits(spec) < WALK_AFTER_HITS:
        return False
    return bool(_first_or(S.words_listed(spec), ESTIMATE_MS, False))


def _walk_key(spec: SearchSpec) -> str:
    # The count reads every project's documents, so the count itself is the key.
    return "search-walk:" + hashlib.sha256(repr(S.hits_capped(spec, WALK_AFTER_HITS)).encode()).hexdigest()


def _walk(spec: SearchSpec, *, sure: bool = False) -> bool:
    """Whether many bodies match: count them through the index, up to WALK_AFTER_HITS and for at most
    COUNT_MS (counting two common words at 1M rollouts took 0.4 s, longer than the walk itself).

    For words the planner's estimate comes first (under a millisecond): when it already says many, the
    count is skipped. It would end the same way: the planner scans the table for a common text, which finds
    WALK_AFTER_HITS or runs out of COUNT_MS (both mean walk) on any table too big to scan in COUNT_MS;
    it cost every common-word page those 150 ms (docs/scale.md, "The search page's fixed costs").

    The answer is kept for WALK_TTL: the list page, its lazy chart and each next page ask the same question.
    A count that ran out of COUNT_MS (a common text, or a rare one read cold) is only a guess: `sure`
    callers count again rather than take it, and a page whose guess failed keeps the way that answered
    (`_walk_corrected`). A decision a minute old can only pick the slower way, never other rows."""
    if not spec.q:
        return False
    if not spec.indexed:  # no index narrows it (spec_parse allowed it in a bounded scope): walk that scope
        return True
    key = _walk_key(spec)
    kept = cache.get(key)
    if kept is not None and (kept[1] or not sure):
        return bool(kept[0])
    if _estimated_many(spec):
        walk, certain = True, True
    else:
        hits = _first_or(S.hits_capped(spec, WALK_AFTER_HITS), COUNT_MS, None)
        # Out of time, the count is a guess. Words the planner did not call many are few or rare: at 10^7
        # rollouts `quota exceeded` (15,999 rollouts) ran out of the 150 ms and walked ~31,000 rollouts
        # (585 ms) where the index way takes 57-230 ms. A substring's or regex's estimate says nothing: walk.
        walk, certain = (spec.mode != "words", False) if hits is None else (hits >= WALK_AFTER_HITS, True)
    if certain or kept is None:  # a guess does not replace what a page found out (_walk_corrected)
        cache.set(key, (walk, certain), WALK_TTL)
    return walk


def _walk_corrected(spec: SearchSpec, walk: bool) -> None:
    cache.set(_walk_key(spec), (walk, False), WALK_TTL)


@contextmanager
def _planned(cur: Any, plan: Plan) -> Iterator[None]:
    """The planner settings of a statement planned `plan` (nothing for ""). The index way takes no plain
    index scans and no sequential scans: the planner costs a tsvector computed from a body at a fraction of
    what it takes (~70 µs for a seed_scale document), and the words index's recheck as computing them all
    anyway, so for a common word in a big run it read the run's (or every) document and computed each one's
    tsvector: over 20 s for a run of 300,000 rollouts. Bitmap scans only leave it the text's index (with a
    small run's, a BitmapAnd), whose exact bitmaps compute none: ~1 s (docs/scale.md). Hashed, no nested
    loops either (`_plan`)."""
    if not plan:
        yield
        return
    loops = "off" if plan == "hashed" else "DEFAULT"
    cur.execute(f"SET LOCAL enable_indexscan = off; SET LOCAL enable_seqscan = off; SET LOCAL enable_nestloop = {loops}")
    yield
    # Inside a caller's transaction (a savepoint here) SET LOCAL would outlive the statement: put them back.
    # An error rolls the savepoint back, and the settings with it.
    cur.execute("SET LOCAL enable_indexscan TO DEFAULT; SET LOCAL enable_seqscan TO DEFAULT; "
                "SET LOCAL enable_nestloop TO DEFAULT")


def _query(alias: str, sql: str, params: list[Any], timeout_ms: int, plan: Plan) -> list[tuple[Any, ...]]:
    with transaction.atomic(using=alias), connections[alias].cursor() as cur:
        # One round trip for the settings (a SET each cost ~90 us of a ~500 us statement). Parallel workers
        # cost more to start than these bounded queries take (2 busy cores).
        cur.execute(f"SET LOCAL statement_timeout = {int(timeout_ms)}; SET LOCAL max_parallel_workers_per_gather = 0; "
                    f"SET LOCAL work_mem = '{BITMAP_MEMORY}'")
        with _planned(cur, plan):
            cur.execute(sql, params)
            return list(cur.fetchall())


def _timed_out(exc: OperationalError) -> bool:
    return getattr(exc.__cause__, "sqlstate", None) == "57014"  # query_canceled: our statement_timeout


def _run(sql: str, params: list[Any], timeout_ms: int, *, plan: Plan = "") -> list[tuple[Any, ...]]:
    """Rows of a search statement planned `plan` (`_plan`), on the read replica when there is one."""
    alias = read_alias()
    try:
        try:
            return _query(alias, sql, params, timeout_ms, plan)
        except OperationalError as exc:
            if alias == "default" or _timed_out(exc):
                raise
            # The replica died since its last probe, or cancelled the query to replay the primary's
            # changes: the primary answers, and the next read probes the replica again.
            log.warning("search on the read replica failed, asking the primary: %s", exc)
            connections[alias].close()
            replica_state(fresh=True)
            return _query("default", sql, params, timeout_ms, plan)
    except DataError as exc:  # invalid regular expression, bad tsquery
        raise SearchFailed(f"the database refused the search: {str(exc).splitlines()[0]}") from exc
    except OperationalError as exc:
        if _timed_out(exc):
            # At 10^7 rollouts a first rare substring after a restart took 4-10 s reading its candidate
            # documents from disk (with the indexes already in memory), the same search then 0.24 s.
            raise SearchFailed(f"the search took longer than {timeout_ms / 1000:g} s; narrow it (a run, steps, "
                               "a rarer phrase), or run it again: a first run reads from disk what a second "
                               "finds in memory", timed_out=True) from exc
        raise SearchFailed(f"the database could not answer the search: {str(exc).strip().splitlines()[0]}") from exc


def _page_rows(scope: Scope, spec: SearchSpec, window: list[int], beyond: int | None = None,
               backward: bool = False) -> list[tuple[Any, ...]]:
    walk = _walk(spec)
    sql, params = _matches_sql(scope, spec, walk=walk, beyond=beyond, backward=backward)
    try:
        return _run(f"{sql} LIMIT %s OFFSET %s", [*params, *window], GUESS_MS if spec.q else PAGE_TIMEOUT_MS,
                    plan=_plan(scope, spec, walk))
    except SearchFailed as exc:
        if not spec.q or not exc.timed_out:
            raise
    # The count's guess was wrong (or the page is deep): the other way gets the rest of the time.
    sql, params = _matches_sql(scope, spec, walk=not walk, beyond=beyond, backward=backward)
    try:
        rows = _run(f"{sql} LIMIT %s OFFSET %s", [*params, *window], PAGE_TIMEOUT_MS,
                    plan=_plan(scope, spec, not walk))
    except SearchFailed as exc:
        if walk and exc.timed_out and S.rollout_conditions(spec, label_id=scope.label_id)[0]:
            raise _filtered_out(spec) from exc
        raise
    _walk_corrected(spec, not walk)
    return rows


def _filtered_out(spec: SearchSpec) -> SearchFailed:
    """Both ways ran out of time on a common text under filters: few or none of its rollouts pass them, and
    each had to be checked (docs/scale.md: `FileNotFoundError` with a tool none of its rollouts used, 13 s
    at 300,000 rollouts a run). Said as such, with what narrows it: a run named already is not advice."""
    narrower = "a step range, or the text without a filter" if spec.run else "a run, a step range, or the text " \
        "without a filter"
    return SearchFailed(f"'{spec.q}' is in many rollouts, and few or none of them pass the filters: checking them "
                        f"took longer than {(GUESS_MS + PAGE_TIMEOUT_MS) / 1000:g} s. Narrow it with {narrower}.",
                        timed_out=True)


def search_page(*, scope: Scope, spec: SearchSpec, page: int = 1, per_page: int = 50) -> tuple[list[Result], bool]:
    """A numbered page (the API's old `page=`: an OFFSET); pages and new clients use `search_results`."""
    if scope.empty or not spec.narrowed:
        return [], False
    rows = _page_rows(scope, spec, [per_page + 1, (page - 1) * per_page])
    return _results(scope, spec, [row[0] for row in rows[:per_page]]), len(rows) > per_page


SEARCH_KEYS = [id_key(desc=True)]  # newest rollout first


def search_results(*, scope: Scope, spec: SearchSpec, cursor: str = "", per_page: int = 50) -> KeysetPage[Result]:
    """A page of matching rollouts after (or before) `cursor`: a rollout id bound, no OFFSET."""
    forward, values = cursor_decode(cursor, order="search", keys=SEARCH_KEYS) if cursor else (True, None)
    if scope.empty or not spec.narrowed:
        return KeysetPage(rows=[], next_cursor="", prev_cursor="", at_start=values is None)
    rows = _page_rows(scope, spec, [per_page + 1, 0], beyond=None if values is None else values[0],
                      backward=not forward)
    page = page_around(rows, per_page=per_page, forward=forward, from_cursor=values is not None,
                       cursor_of=lambda row, ahead: cursor_encode(order="search", forward=ahead, values=[row[0]]))
    return KeysetPage(rows=_results(scope, spec, [row[0] for row in page.rows]), next_cursor=page.next_cursor,
                      prev_cursor=page.prev_cursor, at_start=page.at_start)


def _located(spec: SearchSpec, rollout_ids: list[int]) -> dict[int, tuple[int, list[str]]]:
    """rollout id -> (its turns, calls, answer and prompt that hold the match, the first of them as
    'src:obj'): a recheck of the page's rollouts' own rows (a document is a whole rollout)."""
    if not spec.q or not rollout_ids:
        return {}
    hits, params = S.located_sql(spec, rollout_ids)
    rows = _run(f"SELECT m.rollout_id, count(*), (array_agg(m.src || ':' || m.obj ORDER BY m.turn_index "
                f"NULLS FIRST, m.obj))[1:{SNIPPETS_PER_ROLLOUT}] FROM ({hits}) m(rollout_id, turn_index, src, obj) "
                "GROUP BY m.rollout_id", params, PAGE_TIMEOUT_MS)
    return {rid: (n, firsts) for rid, n, firsts in rows}


def _results(scope: Scope, spec: SearchSpec, ids: list[int]) -> list[Result]:
    located = _located(spec, ids)
    rows = [(rid, *located.get(rid, (0, []))) for rid in ids]
    rollouts = Rollout.objects.select_related("example").defer("metrics", "reward_components").in_bulk(ids)
    runs = scope.runs_for({r.run_id for r in rollouts.values()})
    for r in rollouts.values():
        r.run = runs[r.run_id]
    texts = _hit_texts([h for r in rows for h in (r[2] or [])], ids)
    results = []
    for rollout_id, hits, firsts in rows:
        result = Result(rollout=rollouts[rollout_id], hits=hits)
        result.snippets = [Snippet(texts[key][0], texts[key][1], SafeString("")) for key in firsts or []
                           if key in texts]
        results.append(result)
    _fill_snippets(results, [texts[key][2] for r in rows for key in (r[2] or []) if key in texts], spec)
    return results


def _regex_spans(spec: SearchSpec, texts: list[str]) -> list[tuple[int, int] | None]:
    """Where Postgres's regex engine (not Python's) finds the pattern in each text."""
    if not texts:
        return []
    rows = _run("SELECT regexp_instr(t, %s, 1, 1, 0, 'i'), regexp_instr(t, %s, 1, 1, 1, 'i') "
                "FROM unnest(%s::text[]) WITH ORDINALITY u(t, n) ORDER BY n", [spec.q, spec.q, texts],
                PAGE_TIMEOUT_MS)
    return [(a - 1, b - 1) if a else None for a, b in rows]


def _fill_snippets(results: list[Result], candidates: list[list[str]], spec: SearchSpec) -> None:
    """Each snippet from the first of its texts that holds the match (else the first text)."""
    pattern = pattern_for(spec)
    plain = [[snippet_text(t) for t in texts] for texts in candidates]
    flat = [t for texts in plain for t in texts]
    spans = iter(_regex_spans(spec, flat) if spec.mode == "regex" else [None] * len(flat))
    located = [[(t, next(spans)) for t in texts] for texts in plain]
    snippets = [s for r in results for s in r.snippets]
    for snippet, options in zip(snippets, located, strict=True):
        if spec.mode == "regex":
            text, span = next(((t, sp) for t, sp in options if sp), options[0] if options else ("", None))
        else:
            text, span = next(((t, None) for t, _ in options if find(t, pattern)), options[0] if options else ("", None))
        snippet.html = snippet_html(text, pattern, span)


def _hit_texts(keys: list[str], rollout_ids: list[int]) -> dict[str, tuple[str, int | None, list[str]]]:
    """'src:obj' -> (where it is, turn index, its texts in the order a snippet prefers them). Turns and
    calls are read by their rollouts too: they are views over each rollout's document."""
    ids: dict[str, list[int]] = {"turn": [], "call": [], "rollout": [], "prompt": []}
    for key in keys:
        src, _, obj = key.partition(":")
        ids[src].append(int(obj))
    out: dict[str, tuple[str, int | None, list[str]]] = {}
    turns = Turn.objects.filter(rollout_id__in=rollout_ids, id__in=ids["turn"])
    for t in turns.only("id", "index", "role", "content", "reasoning"):
        out[f"turn:{t.pk}"] = (f"turn #{t.index} · {t.role}", t.index, [t.content, t.reasoning])
    calls = ToolCall.objects.filter(rollout_id__in=rollout_ids, id__in=ids["call"])
    for c in calls.only("id", "name", "arguments", "output", "is_error", "turn_index"):
        args = json.dumps(c.arguments, ensure_ascii=False) if c.arguments is not None else ""
        kind = "error" if c.is_error else "call"
        out[f"call:{c.pk}"] = (f"turn #{c.turn_index} · {kind} {c.name[:60]}", c.turn_index, [c.output, args, c.name])
    for r in Rollout.objects.filter(id__in=ids["rollout"]).only("id", "final_answer", "error"):
        out[f"rollout:{r.pk}"] = ("final answer / error", None, [r.final_answer, r.error])
    for e in Example.objects.filter(id__in=ids["prompt"]).only("id", "prompt"):
        out[f"prompt:{e.pk}"] = ("example prompt", None, [json.dumps(e.prompt, ensure_ascii=False)])
    return out


def _most_matched(matched: list[tuple[Any, ...]], top: int) -> list[int]:
    """The runs with matches, down to the `top`-th most matched (its ties too: a chart that breaks
    ties by name picks the same runs)."""
    per_run: dict[int, int] = {}
    for run_id, _, n in matched:
        per_run[run_id] = per_run.get(run_id, 0) + n
    ranked = sorted(per_run.values(), reverse=True)
    least = ranked[top - 1] if len(ranked) >= top else 1
    return [run_id for run_id, n in per_run.items() if n >= least]


def _too_common(scope: Scope, spec: SearchSpec) -> bool:
    """A search of every run that the page walks (WALK_AFTER_HITS or more): counting it per run and step
    would read nearly the whole search table. A common word at 3·10^6 rollouts ran into the counts' 20 s
    timeout, a core's 20 s for every view of its page (and of a live report panel). One run's counts
    stay: what that costs grows with the run, not with the project."""
    return not spec.run and spec.indexed and _walk(spec, sure=True)  # _walk: False without a text


def search_counts(*, scope: Scope, spec: SearchSpec,
                  top: int | None = None) -> dict[int, dict[int | None, tuple[int, int]]]:
    """run id -> step -> (matching rollouts, rollouts): how often the pattern occurs over training.

    `top`: only the runs with the most matches (at least that many, ties kept), as a chart of that many
    runs shows them: the rollouts per step are counted in those runs alone, not in every run of the
    project (a scan of all its rollouts per search: 17 ms at 10^5 rollouts, seconds at 10^7).
    Raises SearchTooCommon for a text in too many rollouts of every run (`_too_common`)."""
    if scope.empty or not spec.narrowed:
        return {}
    if _too_common(scope, spec):
        raise SearchTooCommon(f"'{spec.q}' is in more than {WALK_AFTER_HITS:,} rollouts: too many to count in every run "
                              "of the project; choose a run to see where it occurs over training")
    if not spec.q and len(scope.run_ids) == 1:
        rows = _filtered_counts(scope, spec)
    else:
        walk = not spec.indexed
        sql, params = _matches_sql(scope, spec, ordered=False, walk=walk)
        plan = _plan(scope, spec, walk)
        # Hashed, the run bounds the rollouts read for the hash (else the whole table).
        run, run_params = (" AND r.run_id = %s", [scope.run_ids[0]]) if plan == "hashed" else ("", [])
        matched = _run(f"SELECT r.run_id, r.step, count(*) FROM ({sql}) x(id) "
                       f"JOIN runs_rollout r ON r.id = x.id{run} GROUP BY 1, 2", [*params, *run_params],
                       COUNTS_TIMEOUT_MS, plan=plan)
        run_ids = scope.run_ids if top is None else _most_matched(matched, top)
        if not run_ids:
            return {}
        where, wparams = S.rollout_filters(SearchSpec(run=spec.run), run_ids=run_ids, label_id=None)
        totals = _run(f"SELECT r.run_id, r.step, count(*) FROM runs_rollout r WHERE {where} GROUP BY 1, 2",
                      wparams, COUNTS_TIMEOUT_MS)
        found = {(run_id, step): n for run_id, step, n in matched}
        rows = [(run_id, step, found.get((run_id, step), 0), n) for run_id, step, n in totals]
    out: dict[int, dict[int | None, tuple[int, int]]] = {}
    for run_id, step, hits, n in rows:
        if hits or spec.q:
            out.setdefault(run_id, {})[step] = (hits, n)
    return out


# One run past this many rollouts, searched for a text many documents hold (`_walk`), has its chart drawn from a
# sample of about CHART_SAMPLE of its rollouts: counting every match reads each matching document and each
# one's rollout (a word in half of a run of 10^6 rollouts: 6.6 s; a common substring there ran into
# COUNTS_TIMEOUT_MS), where testing a sample costs the same at any size (docs/scale.md, "A common text in a
# big run: its chart from a sample").
SAMPLE_RUN = 100_000
CHART_SAMPLE = 4_000
# A sample with fewer hits than this shows too little of where they are: the run is counted exactly.
SAMPLE_MIN_HITS = 40
# ... and where the sample says that the filters keep at most this many of the run's rollouts, exactly by
# testing those alone, filters first, as the sample tests its own: the index way would collect every
# document of the common text first (10 s for a tool that none of a run of 10^6 rollouts calls).
FEW_KEPT = 20_000


@dataclass(frozen=True)
class Sample:
    """One run's counts (as search_counts gives them) over the `tested` of its `rollouts` that a hash of their
    ids picked, of which the filters kept `kept`: the same search draws the same chart."""

    counts: dict[int, dict[int | None, tuple[int, int]]]
    tested: int
    rollouts: int
    kept: int

    @property
    def hits(self) -> int:
        return sum(m for steps in self.counts.values() for m, _ in steps.values())

    @property
    def estimated(self) -> int:
        """The run's matching rollouts, estimated from the sample's share of them (to 3 digits: the sample
        knows no more)."""
        return _scaled(self.hits, self)

    @property
    def drawn(self) -> bool:
        """Whether the chart is drawn from the sample: enough hits to show where they are."""
        return self.hits >= SAMPLE_MIN_HITS


def _scaled(n: int, sample: Sample) -> int:
    return int(float(f"{sample.rollouts * n / sample.tested:.3g}")) if sample.tested else 0


def _probed_counts(scope: Scope, spec: SearchSpec, every: int) -> list[tuple[Any, ...]]:
    """(run id, step, matching, kept by the filters, rollouts) of the scope's one run, over the rollouts whose
    id hashes to 0 modulo `every` (all of them for 1). The filters first: a rollout they drop is not probed
    (AND stops at its first false). The hash, not the id itself: ids run in a group's order, and every k-th
    of them would take the same place in each group."""
    conds, params = S.rollout_conditions(spec, label_id=scope.label_id)
    probe, probe_params = S.rollout_probe(spec)
    kept = " AND ".join(conds) or "true"
    picked, picked_params = ("", []) if every == 1 else (" AND hashint8(r.id) %% %s = 0", [every])
    return _run(f"SELECT r.run_id, r.step, count(*) FILTER (WHERE {kept} AND ({probe}) > 0), "
                f"count(*) FILTER (WHERE {kept}), count(*) FROM runs_rollout r WHERE r.run_id = %s{picked} "
                "GROUP BY 1, 2", [*params, *probe_params, *params, scope.run_ids[0], *picked_params],
                COUNTS_TIMEOUT_MS)


def _step_counts(rows: list[tuple[Any, ...]]) -> dict[int, dict[int | None, tuple[int, int]]]:
    counts: dict[int, dict[int | None, tuple[int, int]]] = {}
    for run, step, hits, _, n in rows:
        counts.setdefault(run, {})[step] = (hits, n)
    return counts


def search_sample(*, scope: Scope, spec: SearchSpec) -> Sample | None:
    """A sample of one run of SAMPLE_RUN rollouts or more, searched for a text many documents hold; None for
    any other search (search_counts answers it exactly)."""
    if scope.empty or not spec.q or len(scope.run_ids) != 1 or not _walk(spec, sure=True):
        return None
    rollouts = _run("SELECT count(*) FROM runs_rollout WHERE run_id = %s", [scope.run_ids[0]],
                    COUNTS_TIMEOUT_MS)[0][0]
    if rollouts < SAMPLE_RUN:
        return None
    rows = _probed_counts(scope, spec, every=max(1, rollouts // CHART_SAMPLE))
    return Sample(counts=_step_counts(rows), tested=sum(n for *_, n in rows), rollouts=rollouts,
                  kept=sum(k for _, _, _, k, _ in rows))


def search_chart(*, scope: Scope, spec: SearchSpec, top: int | None = None) -> tuple[
        dict[int, dict[int | None, tuple[int, int]]], Sample | None]:
    """What a chart of where the text occurs draws (the search page's, a report panel's): one big run's
    sample where it holds enough hits, with the sample; else the exact counts (`search_counts`, or the run's
    few filtered rollouts each tested), with None."""
    sample = search_sample(scope=scope, spec=spec)
    if sample and sample.drawn:
        return sample.counts, sample
    if sample and _scaled(sample.kept, sample) <= FEW_KEPT:
        return _step_counts(_probed_counts(scope, spec, every=1)), None
    return search_counts(scope=scope, spec=spec, top=top), None


def _filtered_counts(scope: Scope, spec: SearchSpec) -> list[tuple[Any, ...]]:
    """(run id, step, rollouts the filters keep, rollouts) of one run searched by its filters alone, in one
    pass over its rollouts. Counted as a search (the kept ids, joined back to their rows) and the totals
    apart, it read the run twice and probed each kept rollout's row again: 0.9 s for `tool:read_file` in a
    run of 300,000 rollouts, 0.25 s this way (docs/scale.md)."""
    conds, params = S.rollout_conditions(spec, label_id=scope.label_id)
    where, wparams = S.rollout_filters(SearchSpec(run=spec.run), run_ids=scope.run_ids, label_id=None)
    kept = " AND ".join(conds) or "true"
    return _run(f"SELECT r.run_id, r.step, count(*) FILTER (WHERE {kept}), count(*) FROM runs_rollout r "
                f"WHERE {where} GROUP BY 1, 2", [*params, *wparams], COUNTS_TIMEOUT_MS)


def search_rollout_ids(*, scope: Scope, spec: SearchSpec, limit: int | None = None) -> Iterator[int]:
    """Every matching rollout id, newest first, streamed through a server-side cursor."""
    if scope.empty or not spec.narrowed:
        return
    sql, params = _matches_sql(scope, spec, walk=False)
    if limit is not None:
        sql, params = f"{sql} LIMIT %s", [*params, limit]
    with transaction.atomic(), connections["default"].cursor() as settings, \
            _planned(settings, _plan(scope, spec, walk=False)), streaming_cursor() as cur:
        cur.execute(f"SELECT x.id FROM ({sql}) x(id)", params)
        while rows := cur.fetchmany(2000):
            yield from (row[0] for row in rows)
