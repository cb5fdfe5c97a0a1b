"""Seed a realistic project at scale (default: 1,000 runs, 1,000,000 rollouts, ~8,000,000 turns).

Everything bulk goes around the ORM: rollouts and their turns and tool calls (one document per
rollout in runs_rolloutturns, runs/turndoc.py's keys) stream through COPY from generated text;
metric points, rollups and series stats are generated inside Postgres with generate_series (no round trip per point). Foreign-key triggers are skipped for this session only
(session_replication_role = replica): every id written here is allocated here, so they hold.

    python manage.py seed_scale --rollouts 100000 [--runs 100] [--project scale] [--replace]
"""

from __future__ import annotations

import math
import random
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, transaction

from deeprepo_web.accounts.models import Membership, Project, Role
from deeprepo_web.analysis.behaviour import error_line, error_signature
from deeprepo_web.runs.ingest.metrics import ROLLUP_WIDTHS
from deeprepo_web.runs.ingest.pg import copy_binary, dumps
from deeprepo_web.runs.models import Example, Run, RunKind, RunStatus

SAMPLES_PER_GROUP = 8
GROUPS_PER_STEP = 4
EXAMPLES_PER_ENV = 500
MODELS = ["Qwen/Qwen3-8B", "Qwen/Qwen3-4B-Instruct-2507", "meta-llama/Llama-3.1-8B-Instruct", "allenai/OLMo-2-7B"]
ENVIRONMENTS = ["repo-audit", "swe-bench-lite", "math-python", "wiki-search"]
TAGS = ["baseline", "ablation", "lr-sweep", "long-context", "kl-0", "sub-llm", "paper", "debug"]
METRIC_KEYS = [
    "reward", "reward_std", "reward/min", "reward/max", "reward/p50", "loss/policy", "loss/kl", "loss/entropy",
    "eval/accuracy", "frac_zero_std", "frac_zero_std_all_fail", "frac_zero_std_all_pass", "tokens/output",
    "num_turns/mean", "lr", "grad_norm",
]
PASSWORD = "scale-pass-123"

ASSISTANT = [
    "I will start by listing the repository to see which modules handle user input.\n```python\nprint(ls('src'))\n```",
    "The query in db.py builds SQL with string formatting; that is an injection risk. Let me read auth.py next.",
    "Delegating the remaining files to sub-LLM calls so each gets a focused audit.",
    "Findings so far: SQL injection in db.py:42, MD5 password hashing in auth.py:17. Checking the upload handler.",
    "The patch below parameterises the query and switches to bcrypt.\n```diff\n- cur.execute(f\"SELECT * FROM u WHERE id={uid}\")\n+ cur.execute(\"SELECT * FROM u WHERE id=%s\", [uid])\n```",
]
TOOL_OUT = [
    "src/\n  app.py\n  db.py\n  auth.py\n  upload.py\n  utils/\n    strings.py",
    "def get_user(uid):\n    cur = conn.cursor()\n    cur.execute(f\"SELECT * FROM users WHERE id={uid}\")\n    return cur.fetchone()",
    "2 findings: [high] sql-injection db.py:42; [medium] weak-hash auth.py:17",
    "Traceback (most recent call last):\n  File \"upload.py\", line 9\nFileNotFoundError: tmp/x",
]
TOOLS = ["read_file", "run_code", "llm_batch", "list_dir"]


def _esc(text: str) -> str:
    """COPY text format: backslash, tab, newline and carriage return are escaped."""
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _body(key: str, text: str, size_key: str = "", size: int = 0) -> str:
    """`,"<key>":<text>` of a turn document's entry (runs/turndoc.py's keys), and its size key when
    the size is not the text's length (turndoc leaves it out then)."""
    sized = f',"{size_key}":{size}' if size_key and size != len(text) else ""
    return f',"{key}":{dumps(text)}{sized}'


class Command(BaseCommand):
    help = "Seed a realistic project at scale through COPY (runs, metrics, examples, rollouts, turns, tool calls)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--rollouts", type=int, default=1_000_000)
        parser.add_argument("--runs", type=int, default=None, help="default: rollouts / 1000, 20..1000")
        parser.add_argument("--project", default="scale")
        parser.add_argument("--metric-steps", type=int, default=300, help="metric points per key per run")
        parser.add_argument("--long-points", type=int, default=1_000_000,
                            help="points of the one long series (run 'long-series', key 'reward')")
        parser.add_argument("--turns", type=int, default=8, help="mean turns per rollout")
        parser.add_argument("--replace", action="store_true", help="delete the project's data first")
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, *args: Any, **opts: Any) -> None:
        n_rollouts: int = opts["rollouts"]
        if n_rollouts < 0 or n_rollouts > 50_000_000:
            raise CommandError("--rollouts must be between 0 and 50,000,000")
        n_runs: int = opts["runs"] or max(20, min(1000, n_rollouts // 1000))
        if n_runs < 1:
            raise CommandError("--runs must be at least 1")
        self.rng = random.Random(opts["seed"])
        t0 = time.perf_counter()
        slug = opts["project"]
        project = Project.objects.filter(slug=slug).first()
        if project is not None:
            if not opts["replace"]:
                raise CommandError(f"project {slug!r} exists; pass --replace to seed it anew")
            self._wipe(project)
        else:
            project = Project.objects.create(slug=slug, name=f"Scale ({slug})")
        owner, _ = User.objects.get_or_create(username=f"{slug}-owner")
        owner.set_password(PASSWORD)
        owner.save()
        Membership.objects.update_or_create(user=owner, project=project, defaults={"role": Role.ADMIN})

        with connection.cursor() as cur:
            cur.execute("SET synchronous_commit = off")
            cur.execute("SET maintenance_work_mem = '256MB'")
            cur.execute("SET work_mem = '64MB'")
        runs = self._runs(project, n_runs)
        examples = self._examples(project)
        self._log(t0, f"{len(runs)} runs, {sum(len(v) for v in examples.values())} examples")
        self._metrics(project, runs, opts["metric_steps"], opts["long_points"])
        self._log(t0, "metrics + rollups")
        counts = self._rollouts(runs, examples, n_rollouts, opts["turns"])
        self._log(t0, f"{counts[0]} rollouts, {counts[1]} turns, {counts[2]} tool calls")
        with connection.cursor() as cur:
            for table in ("runs_rollout", "runs_rolloutturns", "runs_metric", "runs_metricrollup",
                          "runs_metricseries", "runs_run"):
                cur.execute(f"ANALYZE {table}")
        self._log(t0, "analyzed")
        self.stdout.write(f"project {slug}: log in as {owner.username} / {PASSWORD}")

    def _log(self, t0: float, what: str) -> None:
        self.stdout.write(f"[{time.perf_counter() - t0:7.1f}s] {what}")
        self.stdout.flush()

    # ------------------------------------------------------------ wipe

    def _wipe(self, project: Project) -> None:
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute("SET LOCAL session_replication_role = replica")
            runs = "SELECT id FROM runs_run WHERE project_id = %s"
            cur.execute(f"DELETE FROM runs_rolloutturns WHERE rollout_id IN "
                        f"(SELECT id FROM runs_rollout WHERE run_id IN ({runs}))", [project.pk])
            cur.execute(f"DELETE FROM runs_rollout WHERE run_id IN ({runs})", [project.pk])
            series = f"SELECT id FROM runs_metricseries WHERE run_id IN ({runs})"
            cur.execute(f"DELETE FROM runs_metricrollup WHERE series_id IN ({series})", [project.pk])
            cur.execute(f"DELETE FROM runs_metric WHERE series_id IN ({series})", [project.pk])
            cur.execute(f"DELETE FROM runs_metricseries WHERE run_id IN ({runs})", [project.pk])
            cur.execute("DELETE FROM runs_artifact WHERE run_id IN (SELECT id FROM runs_run WHERE project_id = %s)",
                        [project.pk])
            cur.execute("DELETE FROM runs_run WHERE project_id = %s", [project.pk])
            cur.execute("DELETE FROM runs_example WHERE project_id = %s", [project.pk])

    # ------------------------------------------------------------ runs and examples

    def _runs(self, project: Project, n: int) -> list[Run]:
        rng = self.rng
        now = datetime.now(tz=UTC)
        objs: list[Run] = []
        for i in range(n):
            is_eval = i % 7 == 6
            started = now - timedelta(hours=(n - i) * 3 + rng.random())
            status = rng.choices(
                [RunStatus.FINISHED, RunStatus.RUNNING, RunStatus.FAILED, RunStatus.CRASHED, RunStatus.CANCELLED],
                [80, 6, 6, 4, 4],
            )[0]
            if i == n - 1:
                status = RunStatus.RUNNING
            lr = rng.choice([1e-6, 3e-6, 1e-5, 3e-5])
            model = rng.choice(MODELS)
            env = ENVIRONMENTS[i % len(ENVIRONMENTS)]
            objs.append(Run(
                project=project,
                name=f"{'eval' if is_eval else 'grpo'}-{env}-{model.split('/')[-1].lower()}-{i:04d}",
                kind=RunKind.EVAL if is_eval else RunKind.TRAIN,
                status=status,
                model=model,
                environment=env,
                method="" if is_eval else "grpo",
                config={"lr": lr, "group_size": SAMPLES_PER_GROUP, "batch_size": SAMPLES_PER_GROUP * GROUPS_PER_STEP,
                        "kl_coef": rng.choice([0.0, 0.01, 0.05]), "max_turns": 12,
                        "optim": {"name": "adamw", "betas": [0.9, 0.99]}},
                tags=rng.sample(TAGS, rng.randint(0, 3)),
                notes=rng.choice(["", "", "rerun after fixing the sandbox timeout", "higher temperature 1.1",
                                  "sub-LLM delegation enabled"]),
                source="sdk",
                created_at=started,
                started_at=started,
                finished_at=None if status == RunStatus.RUNNING else started + timedelta(minutes=rng.randint(20, 600)),
            ))
        runs = Run.objects.bulk_create(objs, batch_size=1000)
        # Evals point at the training run before them, at a checkpoint step.
        with connection.cursor() as cur:
            cur.execute(
                "UPDATE runs_run e SET parent_id = t.id, checkpoint_step = 100 * (e.id %% 3 + 1) "
                "FROM runs_run t WHERE e.project_id = %s AND e.kind = 'eval' AND t.id = e.id - 1 AND t.kind = 'train'",
                [project.pk],
            )
        long = Run.objects.create(project=project, name="long-series", kind=RunKind.TRAIN, status=RunStatus.FINISHED,
                                  model=MODELS[0], environment=ENVIRONMENTS[0], method="grpo", tags=["long"],
                                  created_at=now - timedelta(days=400), started_at=now - timedelta(days=400),
                                  finished_at=now - timedelta(days=380))
        runs.append(long)
        return runs

    def _examples(self, project: Project) -> dict[str, list[int]]:
        import hashlib

        objs = []
        for env in ENVIRONMENTS:
            for j in range(EXAMPLES_PER_ENV):
                key = f"{env}/task-{j:05d}"
                objs.append(Example(
                    project=project, environment=env, key=key, key_hash=hashlib.sha256(key.encode()).hexdigest(),
                    prompt=[{"role": "user", "content": f"Audit the repository for task {j} and report the vulnerabilities."}],
                    oracle=f"sql-injection db.py:{j % 90 + 10}", info={"difficulty": j % 5},
                ))
        Example.objects.bulk_create(objs, batch_size=2000)
        out: dict[str, list[int]] = {}
        for ex_id, env in Example.objects.filter(project=project).values_list("id", "environment"):
            out.setdefault(env, []).append(ex_id)
        return out

    # ------------------------------------------------------------ metrics (inside Postgres)

    def _metrics(self, project: Project, runs: list[Run], steps: int, long_points: int) -> None:
        long = runs[-1]
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute("SET LOCAL session_replication_role = replica")
            cur.execute(
                "INSERT INTO runs_metricseries (run_id, key, count) "
                "SELECT r.id, k, 0 FROM runs_run r CROSS JOIN unnest(%s::text[]) AS k "
                "WHERE r.project_id = %s AND r.id <> %s",
                [METRIC_KEYS, project.pk, long.pk],
            )
            cur.execute(
                "INSERT INTO runs_metricseries (run_id, key, count) SELECT %s, k, 0 FROM unnest(%s::text[]) AS k",
                [long.pk, ["reward", "loss/policy"]],
            )
            # A learning curve per run: quality q in [0.2, 0.9] reached with time constant tau, plus noise.
            value = """
              CASE s.key
                WHEN 'reward' THEN q * (1 - exp(-least(g / tau, 50.0))) + 0.08 * (random() - 0.5)
                WHEN 'reward_std' THEN 0.35 * exp(-least(g / (2 * tau), 50.0)) + 0.05 * random()
                WHEN 'reward/min' THEN greatest(0, q * (1 - exp(-least(g / tau, 50.0))) - 0.4 - 0.1 * random())
                WHEN 'reward/max' THEN least(1, q * (1 - exp(-least(g / tau, 50.0))) + 0.4 + 0.1 * random())
                WHEN 'reward/p50' THEN q * (1 - exp(-least(g / tau, 50.0))) + 0.1 * (random() - 0.5)
                WHEN 'loss/policy' THEN 0.05 * (random() - 0.5) * exp(-least(g / (3 * tau), 50.0))
                WHEN 'loss/kl' THEN 0.002 * least(g / tau, 50.0) * (0.8 + 0.4 * random())
                WHEN 'loss/entropy' THEN 1.2 * exp(-least(g / (4 * tau), 50.0)) + 0.05 * random()
                WHEN 'eval/accuracy' THEN q * (1 - exp(-least(g / tau, 50.0))) * 0.9 + 0.03 * random()
                WHEN 'frac_zero_std' THEN 0.6 * exp(-least(g / tau, 50.0)) + 0.15 * random()
                WHEN 'frac_zero_std_all_fail' THEN 0.5 * exp(-least(g / tau, 50.0)) + 0.05 * random()
                WHEN 'frac_zero_std_all_pass' THEN 0.1 * (1 - exp(-least(g / tau, 50.0))) + 0.05 * random()
                WHEN 'tokens/output' THEN 900 + 400 * (1 - exp(-least(g / tau, 50.0))) + 80 * random()
                WHEN 'num_turns/mean' THEN 3 + 4 * (1 - exp(-least(g / tau, 50.0))) + random()
                WHEN 'lr' THEN 1e-5 * least(1, (g + 1) / 20.0)
                ELSE 1 + random()
              END"""
            cur.execute(
                f"""INSERT INTO runs_metric (series_id, step, value, time)
                SELECT s.id, g, {value},
                       extract(epoch FROM r.started_at) + g * 20
                FROM runs_metricseries s JOIN runs_run r ON r.id = s.run_id
                CROSS JOIN LATERAL (SELECT 0.2 + 0.7 * ((r.id * 7919) %% 1000) / 1000.0 AS q,
                                           10 + (r.id * 104729) %% 120 AS tau) AS p
                CROSS JOIN LATERAL generate_series(0, CASE WHEN r.id = %s THEN %s ELSE %s END - 1) AS g
                WHERE r.project_id = %s""",
                [long.pk, long_points, steps, project.pk],
            )
            series = "SELECT s.id FROM runs_metricseries s JOIN runs_run r ON r.id = s.run_id WHERE r.project_id = %s"
            # Level 0 from the points, each coarser level from the one below it (widths are powers of 8).
            cur.execute(
                f"""INSERT INTO runs_metricrollup (series_id, level, bucket, min_value, max_value, last_value,
                                                   last_step, last_time)
                SELECT series_id, 0, step / %s, min(value), max(value), (array_agg(value ORDER BY step DESC))[1],
                       max(step), (array_agg(time ORDER BY step DESC))[1]
                FROM runs_metric WHERE series_id IN ({series}) GROUP BY series_id, step / %s""",
                [ROLLUP_WIDTHS[0], project.pk, ROLLUP_WIDTHS[0]],
            )
            for level in range(1, len(ROLLUP_WIDTHS)):
                ratio = ROLLUP_WIDTHS[level] // ROLLUP_WIDTHS[level - 1]
                cur.execute(
                    f"""INSERT INTO runs_metricrollup (series_id, level, bucket, min_value, max_value, last_value,
                                                       last_step, last_time)
                    SELECT series_id, %s, bucket / %s, min(min_value), max(max_value),
                           (array_agg(last_value ORDER BY last_step DESC))[1], max(last_step),
                           (array_agg(last_time ORDER BY last_step DESC))[1]
                    FROM runs_metricrollup WHERE level = %s AND series_id IN ({series})
                    GROUP BY series_id, bucket / %s""",
                    [level, ratio, level - 1, project.pk, ratio],
                )
            cur.execute(
                f"""UPDATE runs_metricseries s SET count = CASE WHEN s.run_id = %s THEN %s ELSE %s END,
                       first_step = 0, last_step = a.last_step, last_value = a.last_value,
                       min_value = a.mn, max_value = a.mx
                FROM (SELECT DISTINCT ON (series_id) series_id, last_step, last_value,
                             min(min_value) OVER w AS mn, max(max_value) OVER w AS mx
                      FROM runs_metricrollup WHERE level = {len(ROLLUP_WIDTHS) - 1} AND series_id IN ({series})
                      WINDOW w AS (PARTITION BY series_id)
                      ORDER BY series_id, bucket DESC) AS a
                WHERE s.id = a.series_id""",
                [long.pk, long_points, steps, project.pk],
            )

    # ------------------------------------------------------------ rollouts, turns, tool calls (COPY)

    def _rollouts(self, runs: list[Run], examples: dict[str, list[int]], total: int, mean_turns: int
                  ) -> tuple[int, int, int]:
        rng = self.rng
        runs = [r for r in runs if r.name != "long-series"]
        per_run = [total // len(runs) + (1 if i < total % len(runs) else 0) for i in range(len(runs))]
        with connection.cursor() as cur:
            cur.execute("SELECT nextval(pg_get_serial_sequence('runs_rollout', 'id'))")
            rollout_id = cur.fetchone()[0]
            # Turns and calls are views over runs_rolloutturns: their ids come from sequences of their own.
            cur.execute("SELECT nextval('runs_turn_id_seq'), nextval('runs_toolcall_id_seq')")
            turn_id, call_id = cur.fetchone()
        # Document pieces (JSON text). A turn's size is its text's length escaped for COPY (a newline
        # counts 2), a call's output size 120: what the seed wrote when turns and calls were rows.
        assistant = [_body("c", t, "cs", len(_esc(t))) for t in ASSISTANT]
        tool_turn = [_body("c", t, "cs", len(_esc(t))) for t in TOOL_OUT]
        tool_out = [_body("o", t, "os", 120) for t in TOOL_OUT]
        failed = [(error_line(t), error_signature(t)) for t in TOOL_OUT]  # a failed call's [line, signature]
        user = "Audit this repository. Report every vulnerability with file:line, then propose a patch."
        user = _body("c", user, "cs", len(_esc(user)))
        reasoning = _body("rs", "The user input flows into the query; I should confirm by reading the file.")
        error = ',"e":true'
        r_cols = ("id, run_id, uid, example_id, step, sample_index, reward, reward_components, advantage, num_turns, "
                  "input_tokens, output_tokens, cost, is_truncated, stop_condition, error, duration, final_answer, "
                  "metrics, tools, tool_errors, created_at")
        n_r = n_t = n_c = 0
        raw = connection.connection  # the psycopg connection under Django's wrapper
        NULL = "\\N"
        with transaction.atomic():
            with connection.cursor() as dcur:
                dcur.execute("SET LOCAL session_replication_role = replica")
            pg = raw.cursor()
            r_rows: list[str] = []
            d_rows: list[tuple[int, str]] = []
            for run_index, (run, count) in enumerate(zip(runs, per_run, strict=True)):
                exs = examples[run.environment]
                created = run.started_at.isoformat() if run.started_at else "2025-01-01T00:00:00+00:00"
                is_eval = run.kind == RunKind.EVAL
                q = 0.2 + 0.7 * ((run.pk * 7919) % 1000) / 1000.0
                per_step = SAMPLES_PER_GROUP * GROUPS_PER_STEP
                n_steps = max(1, math.ceil(count / per_step))
                step_gap = max(1, 300 // n_steps)
                offset = rng.randrange(len(exs))
                model = f',"m":{dumps(run.model)}' if run.model else ""
                for i in range(count):
                    group = i // SAMPLES_PER_GROUP
                    step_i = i // per_step
                    ex = exs[(offset + group) % len(exs)]
                    progress = step_i / n_steps
                    p = q * (0.3 + 0.7 * progress)
                    # Some groups are dead on purpose: hard examples fail for all, easy ones pass for all.
                    hardness = (ex * 2654435761 >> 7) % 10
                    if hardness == 0:
                        reward = 0.0
                    elif hardness == 9 and progress > 0.5:
                        reward = 1.0
                    else:
                        reward = 1.0 if rng.random() < p else round(rng.random() * 0.5, 3)
                    n_turns = max(2, min(16, mean_turns + rng.randint(-4, 4)))
                    in_tok = 600 * n_turns + rng.randint(0, 400)
                    out_tok = 120 * n_turns + rng.randint(0, 200)
                    truncated = n_turns >= 15
                    step = NULL if is_eval else str(step_i * step_gap)
                    stop = "max_turns" if truncated else "answered"
                    tools: set[str] = set()
                    tool_errors: list[list[Any]] = []
                    doc: list[str] = []
                    for t in range(n_turns):
                        if t == 0:
                            doc.append(f'{{"id":{turn_id},"i":0,"r":"user"{user}}}')
                        elif t % 2 == 1:
                            call = ""
                            if t + 1 < n_turns:
                                name = TOOLS[(i + t) % len(TOOLS)]
                                err = (i + t) % 23 == 0
                                tools.add(name)
                                if err:
                                    tool_errors.append([name, t, *failed[(i + t + 1) % len(TOOL_OUT)]])
                                call = (f',"k":[{{"id":{call_id},"i":0,"ci":"call_{t}","n":"{name}",'
                                        f'"a":{{"path":"src/db.py"}}{tool_out[(i + t + 1) % len(tool_out)]}'
                                        f'{error if err else ""},"d":0.4}}]')
                                call_id += 1
                                n_c += 1
                            doc.append(f'{{"id":{turn_id},"i":{t},"r":"assistant"{assistant[(i + t) % len(assistant)]}'
                                       f'{reasoning},"it":{500 + 40 * t},"ot":{90 + (i + t) % 60},"l":0.8{model}'
                                       f"{call}}}")
                        else:
                            doc.append(f'{{"id":{turn_id},"i":{t},"r":"tool"{tool_turn[(i + t) % len(tool_turn)]}}}')
                        turn_id += 1
                        n_t += 1
                    d_rows.append((rollout_id, f"[{','.join(doc)}]"))
                    r_rows.append(
                        f"{rollout_id}\t{run.pk}\tr{i}\t{ex}\t{step}\t{i % SAMPLES_PER_GROUP}\t{reward}\t"
                        f'{{"f1": {reward}}}\t{NULL}\t{n_turns // 2}\t{in_tok}\t{out_tok}\t'
                        f"{in_tok * 2e-7 + out_tok * 8e-7:.6f}\t{'t' if truncated else 'f'}\t{stop}\t\t"
                        f"{n_turns * 1.7:.2f}\tsql-injection db.py:42\t{{}}\t{_esc(dumps(sorted(tools)))}\t"
                        f"{_esc(dumps(tool_errors))}\t{created}\n"
                    )
                    rollout_id += 1
                    n_r += 1
                # Flush every ~100k rollouts: memory stays bounded, COPY gets big writes.
                if len(r_rows) >= 100_000 or run_index == len(runs) - 1:
                    self._copy_rows(pg, f"COPY runs_rollout ({r_cols}) FROM STDIN", r_rows)
                    # Binary: the documents' JSON goes as it is, not escaped for a text COPY and back.
                    with copy_binary("runs_rolloutturns", ("rollout_id", "doc")) as copy:
                        for row in d_rows:
                            copy.write_row(row)
                    r_rows.clear()
                    d_rows.clear()
                    self.stdout.write(f"  ... {n_r} rollouts")
                    self.stdout.flush()
            with connection.cursor() as cur:
                cur.execute("SELECT setval(pg_get_serial_sequence('runs_rollout', 'id'), %s), "
                            "setval('runs_turn_id_seq', %s), setval('runs_toolcall_id_seq', %s)",
                            [max(rollout_id, 1), max(turn_id, 1), max(call_id, 1)])
        return n_r, n_t, n_c

    @staticmethod
    def _copy_rows(pg: Any, sql: str, rows: list[str], chunk: int = 20000) -> None:
        if not rows:
            return
        with pg.copy(sql) as copy:
            for start in range(0, len(rows), chunk):
                copy.write("".join(rows[start:start + chunk]))
