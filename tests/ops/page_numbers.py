"""Print what a project's owner reads on the project, run, rollouts and trajectory pages (text only,
relative times removed), as one JSON object. Run as a module against whichever database
DATABASE_URL names, so an original and a restored install are read by the same code."""

from __future__ import annotations

import json
import os
import re
import sys


def page_text(html: str) -> str:
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    text = re.sub(r"<[^>]+>", " ", html)
    text = re.sub(r"\b(\d+|an?)\s+(second|minute|hour|day)s?(,\s*\d+\s+(second|minute|hour|day)s?)?\s+ago\b|\bnow\b", "", text)
    text = re.sub(r"\b\d+(\.\d+)?[hms]\b", "", text)  # a running run's age ("15s", "1m 5s")
    return " ".join(text.split())


def main(slug: str) -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")
    django.setup()
    from django.test import Client

    from deeprepo_web.accounts.models import Membership
    from deeprepo_web.runs.models import Rollout, Run

    owner = Membership.objects.filter(project__slug=slug, role="admin").select_related("user").first()
    client = Client()
    client.force_login(owner.user)  # type: ignore[union-attr]
    out = {"project": page_text(client.get(f"/p/{slug}/").content.decode())}
    for run in Run.objects.filter(project__slug=slug).order_by("public_id"):
        base = f"/p/{slug}/runs/{run.public_id}/"
        out[run.public_id] = page_text(client.get(base).content.decode())
        out[f"{run.public_id}/rollouts"] = page_text(client.get(base + "rollouts/").content.decode())
        for rollout in Rollout.objects.filter(run=run).order_by("pk")[:3]:
            res = client.get(f"{base}rollouts/{rollout.pk}/")
            out[f"{run.public_id}/{rollout.pk}"] = f"{res.status_code} {page_text(res.content.decode())}"
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
