"""Beat: the retention sweep (old rollout bodies and OTLP items), bounded per beat."""

from __future__ import annotations

from workers.celery import app


@app.task(name="deeprepo.retention.sweep", soft_time_limit=600, time_limit=660, ignore_result=True)
def retention_sweep() -> dict[str, int]:
    from deeprepo_web.retention.services import retention_sweep as sweep

    done = sweep()
    return {"bodies": done.bodies, "otlp_items": done.otlp_items, "blobs": done.blobs}
