"""Fills the replica tests' own database (run in a `manage.py shell` against it): two admins of
project "demo", one run of 30 rollouts, indexed for search. Prints the ids as one JSON line."""

from __future__ import annotations

import json


def seed() -> None:
    from django.contrib.auth.models import User

    from deeprepo_web.accounts.services import membership_set, project_create
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.models import Rollout
    from deeprepo_web.runs.services import run_create
    from deeprepo_web.search.indexer import search_index_update
    from tests.factories import rollout

    writer = User.objects.create_user("writer", password="writer-pass-123")
    reader = User.objects.create_user("reader", password="reader-pass-123")
    project = project_create(slug="demo", name="Demo", owner=writer)
    membership_set(project=project, user=reader, role="admin")
    run, _ = run_create(project=project, name="replica-run", environment="env")
    rollouts_ingest(run=run, rollouts=[rollout(f"ex-{i % 5}", step=i // 10, uid=f"u{i}", reward=i / 30)
                                       for i in range(30)])
    search_index_update()
    print(json.dumps({"run": run.public_id, "rollout": Rollout.objects.filter(run=run).values_list("id", flat=True)
                      .first()}))
