"""The audit log: each change an admin must trace leaves a row naming who did it, through the real
pages; only project admins see the page (everyone else 404); rows outlive what they name."""

from __future__ import annotations

from django.urls import reverse

from deeprepo_web.accounts.models import ApiKey, Membership
from deeprepo_web.audit.models import Action, AuditEvent
from deeprepo_web.jobs.services.clusters import cluster_save
from deeprepo_web.runs.services import run_create, run_delete
from deeprepo_web.sharing.models import ShareLink


def _rows(project):
    return [(e.actor, e.action, e.target) for e in AuditEvent.objects.filter(project=project).order_by("pk")]


def test_changes_through_the_pages_are_recorded_with_who(client, team, settings):
    settings.DEEPREPO_OUTBOUND_ALLOW = ""
    AuditEvent.objects.all().delete()  # the fixture's own setup is not what this test looks at
    run, _ = run_create(project=team.project, name="grpo-7", environment="env")
    client.force_login(team.owner)
    slug = team.project.slug
    client.post(reverse("key_create", args=[slug]), {"name": "cluster jobs", "scopes": ["ingest"]})
    key = ApiKey.objects.get(project=team.project, name="cluster jobs")
    client.post(reverse("key_revoke", args=[slug, key.pk]))
    client.post(reverse("key_revoke", args=[slug, key.pk]))  # a second revoke changes nothing: no row
    client.post(reverse("member_set", args=[slug]), {"username": "outsider", "role": "viewer"})
    client.post(reverse("member_set", args=[slug]), {"username": "outsider", "role": "editor"})
    membership = Membership.objects.get(project=team.project, user=team.outsider)
    client.post(reverse("member_remove", args=[slug, membership.pk]))
    client.post(reverse("share_new", args=[slug]), {"kind": "run", "target": run.public_id, "title": "for review"})
    link = ShareLink.objects.get(project=team.project)
    client.post(reverse("share_revoke", args=[slug, link.pk]))
    client.post(reverse("judge", args=[slug]), {"base_url": "https://8.8.8.8/v1", "model": "judge-m",
                                                "api_key": "sk-not-in-the-log"})
    client.post(reverse("judge", args=[slug]), {"base_url": "http://169.254.169.254/v1", "model": "m"})  # refused
    cluster_save(project=team.project, name="local-a", kind="local", settings_in={})  # from a shell
    run_delete(run=run)

    prefix = f"drk_{key.prefix} cluster jobs"
    assert _rows(team.project) == [
        ("owner", Action.KEY_CREATED, prefix),
        ("owner", Action.KEY_REVOKED, prefix),
        ("owner", Action.MEMBER_SET, "outsider"),
        ("owner", Action.MEMBER_SET, "outsider"),
        ("owner", Action.MEMBER_REMOVED, "outsider"),
        ("owner", Action.SHARE_CREATED, "run for review"),
        ("owner", Action.SHARE_REVOKED, "run for review"),
        ("owner", Action.JUDGE_ENDPOINT_SAVED, "https://8.8.8.8/v1"),
        ("operator", Action.CLUSTER_SAVED, "local local-a"),
        ("operator", Action.RUN_DELETED, f"grpo-7 ({run.public_id})"),
    ]
    roles = [e.detail["role"] for e in AuditEvent.objects.filter(action=Action.MEMBER_SET).order_by("pk")]
    assert roles == ["viewer", "editor"]

    html = client.get(reverse("audit_log", args=[slug])).content.decode()
    assert "sk-not-in-the-log" not in html  # secrets never reach the log
    for text in ("API key created", "share link revoked", "run deleted", f"grpo-7 ({run.public_id})",
                 "judge endpoint changed", "operator"):
        assert text in html
    # Newest first.
    assert html.index("run deleted") < html.index("API key created")


def test_only_admins_see_the_log(client, team):
    url = reverse("audit_log", args=[team.project.slug])
    assert client.get(url).status_code == 302  # to the login page
    for user in (team.editor, team.viewer, team.outsider):
        client.force_login(user)
        assert client.get(url).status_code == 404, user.username
    client.force_login(team.owner)
    assert client.get(url).status_code == 200
    assert client.get(reverse("audit_log", args=["no-such-project"])).status_code == 404
    assert client.post(url).status_code == 405


def test_rows_are_kept_after_what_they_name_is_gone(client, team):
    run, _ = run_create(project=team.project, name="short-lived", environment="env")
    run_delete(run=run)
    team.editor.delete()
    assert AuditEvent.objects.filter(project=team.project, target__contains="short-lived").count() == 1
    assert AuditEvent.objects.filter(project=team.project, target="editor", action=Action.MEMBER_SET).count() == 1


def test_pages_of_two_hundred(client, team):
    AuditEvent.objects.bulk_create([AuditEvent(project=team.project, actor="operator", action=Action.KEY_CREATED,
                                               target=f"k{i}") for i in range(250)])
    client.force_login(team.owner)
    first = client.get(reverse("audit_log", args=[team.project.slug])).content.decode()
    assert "k249" in first and ">k50<" in first and ">k49<" not in first and "Older entries" in first
    last_id = AuditEvent.objects.filter(project=team.project).order_by("-pk")[199].pk
    older = client.get(reverse("audit_log", args=[team.project.slug]), {"before": last_id}).content.decode()
    assert ">k49<" in older and ">k0<" in older and "k249" not in older and "Older entries" not in older
