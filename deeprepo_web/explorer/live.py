"""What an open run page polls while the run is live: status, the newest step, the newest rollout.

One small read a poll (the run's series rows and one index lookup), so an idle page costs the server almost nothing; the
page fetches new points (`series?after=`) and GRPO health only when these numbers moved.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone

from deeprepo_web.replica.router import read_cursor
from deeprepo_web.runs.models import FINAL_RUN_STATUSES, Run

# Seconds between polls: quick while points keep arriving, slow once the run has gone quiet.
POLL_ACTIVE = 2.0
POLL_IDLE = 5.0
# A run whose last ingest (Run.updated_at, runs.services.run_touch) is younger than this is active.
ACTIVE_SECONDS = 30.0


@dataclass
class LiveState:
    status: str
    final: bool
    last_step: int | None  # the largest step of any metric key
    keys: int  # how many metric keys the run has
    points: int  # how many points in all: moves when a key is logged late at a step already seen
    rollout: int | None  # the id of its newest rollout: grows when rollouts arrive
    active: bool  # received data in the last ACTIVE_SECONDS: the page polls quickly

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def run_live_state(*, run: Run) -> LiveState:
    with read_cursor() as cur:
        cur.execute(
            "SELECT max(last_step), count(*), coalesce(sum(count), 0), "
            "(SELECT max(id) FROM runs_rollout WHERE run_id = %(r)s) FROM runs_metricseries WHERE run_id = %(r)s",
            {"r": run.pk},
        )
        last_step, keys, points, rollout = cur.fetchone()
    final = run.status in FINAL_RUN_STATUSES
    age = (timezone.now() - run.updated_at).total_seconds() if run.updated_at else None
    return LiveState(status=run.status, final=final, last_step=last_step, keys=keys, points=int(points),
                     rollout=rollout,
                     active=not final and age is not None and age < ACTIVE_SECONDS)
