"""The job template, cluster, job launch and share link services store NUL bytes and lone surrogates
as U+FFFD (Postgres refuses both in text and jsonb), whoever calls them: the forms refuse NUL
first, but the API, commands and JSON fields (a template's parameter schema) do not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deeprepo_web.jobs.models import Cluster, Job, JobTemplate
from deeprepo_web.jobs.services.clusters import cluster_save
from deeprepo_web.jobs.services.errors import JobInputError
from deeprepo_web.jobs.services.launch import job_launch
from deeprepo_web.jobs.services.templates import template_save
from deeprepo_web.runs.services import run_create
from deeprepo_web.sharing.models import ShareLink
from deeprepo_web.sharing.services import ShareError, share_create

pytestmark = pytest.mark.django_db

# What is passed, and what must be stored: the bad character replaced, the rest kept.
BAD = [pytest.param("a\x00b", id="nul"), pytest.param("a\ud800b", id="lone-surrogate")]
STORED = "a\ufffdb"


def _template(team: Any, bad: str, slug: str = "bad-text", template: JobTemplate | None = None) -> JobTemplate:
    return template_save(
        project=team.project, slug=slug, name=f"name {bad}", kind="eval", description=f"about {bad}",
        command_template=f"echo {bad} {{mode}} {{note}}", template=template,
        params_schema=[
            {"name": "mode", "type": "choice", "label": f"mode {bad}", "help": f"help {bad}",
             "choices": [f"x {bad}", "plain"], "default": "plain"},
            {"name": "note", "type": "str"},
        ],
    )


def _assert_template_clean(pk: int) -> None:
    stored = JobTemplate.objects.get(pk=pk)
    assert (stored.name, stored.description) == (f"name {STORED}", f"about {STORED}")
    assert stored.command_template == f"echo {STORED} {{mode}} {{note}}"
    mode = stored.params_schema[0]
    assert (mode["label"], mode["help"], mode["choices"]) == (f"mode {STORED}", f"help {STORED}",
                                                              [f"x {STORED}", "plain"])


@pytest.mark.parametrize("bad", BAD)
def test_template_create_and_update_store_replacement_characters(team: Any, bad: str) -> None:
    _assert_template_clean(_template(team, bad).pk)
    plain = template_save(project=team.project, slug="plain", name="plain", kind="eval", command_template="true",
                          params_schema=[])
    _assert_template_clean(_template(team, bad, slug="plain", template=plain).pk)


@pytest.mark.parametrize("bad", BAD)
def test_template_slug_with_bad_characters_is_refused_by_name(team: Any, bad: str) -> None:
    # A slug goes into URLs, so it is refused rather than stored with U+FFFD.
    with pytest.raises(JobInputError) as exc:
        template_save(project=team.project, slug=f"s{bad}", name="n", kind="eval", command_template="true",
                      params_schema=[])
    assert exc.value.field == "slug"
    assert not JobTemplate.objects.filter(project=team.project).exists()


def _cluster_settings(root: Path, bad: str) -> dict[str, Any]:
    return {"state_dir": f"{root}/state {bad}", "workdir": f"{root}/work {bad}",
            "output_root": f"{root}/out {bad}", "deeprepo_url": f"http://127.0.0.1:8000/{bad}"}


def _assert_cluster_clean(pk: int, name: str, root: Path) -> None:
    stored = Cluster.objects.get(pk=pk)
    assert stored.name == name
    assert stored.settings == {"state_dir": f"{root}/state {STORED}", "workdir": f"{root}/work {STORED}",
                               "output_root": f"{root}/out {STORED}",
                               "deeprepo_url": f"http://127.0.0.1:8000/{STORED}"}


@pytest.mark.parametrize("bad", BAD)
def test_cluster_create_and_update_store_replacement_characters(team: Any, tmp_path: Path, bad: str) -> None:
    created = cluster_save(project=team.project, name=f"cluster {bad}", kind="local",
                           settings_in=_cluster_settings(tmp_path, bad))
    _assert_cluster_clean(created.pk, f"cluster {STORED}", tmp_path)
    plain = cluster_save(project=team.project, name="plain", kind="local", settings_in={})
    updated = cluster_save(project=team.project, name=f"other {bad}", kind="local", cluster=plain,
                           settings_in=_cluster_settings(tmp_path / "other", bad))
    _assert_cluster_clean(updated.pk, f"other {STORED}", tmp_path / "other")


@pytest.mark.parametrize("bad", BAD)
def test_job_launch_stores_a_cleaned_name(team: Any, tmp_path: Path, bad: str) -> None:
    cluster = cluster_save(project=team.project, name="here", kind="local", settings_in={"state_dir": str(tmp_path)})
    job = job_launch(project=team.project, template=_template(team, "ok"), cluster=cluster, user=team.editor,
                     params={"note": "fine"}, name=f"job {bad}")
    stored = Job.objects.select_related("run").get(pk=job.pk)
    assert (stored.name, stored.run.name) == (f"job {STORED}", f"job {STORED}")


def test_job_parameter_with_a_lone_surrogate_is_stored_replaced(team: Any, tmp_path: Path) -> None:
    cluster = cluster_save(project=team.project, name="here", kind="local", settings_in={"state_dir": str(tmp_path)})
    job = job_launch(project=team.project, template=_template(team, "ok"), cluster=cluster, user=team.editor,
                     params={"note": "a\ud800b"})
    stored = Job.objects.select_related("run").get(pk=job.pk)
    assert stored.parameters == {"mode": "plain", "note": STORED}
    assert stored.run.config["parameters"] == stored.parameters
    assert stored.command == f"echo ok plain '{STORED}'"


def test_job_parameter_with_nul_is_refused_by_name(team: Any, tmp_path: Path) -> None:
    # A value that reaches a shell: params.py refuses NUL with a message, as before.
    cluster = cluster_save(project=team.project, name="here", kind="local", settings_in={"state_dir": str(tmp_path)})
    with pytest.raises(JobInputError) as exc:
        job_launch(project=team.project, template=_template(team, "ok"), cluster=cluster, user=team.editor,
                   params={"note": "a\x00b"})
    assert exc.value.field == "note"
    assert not Job.objects.exists()


@pytest.mark.parametrize("bad", BAD)
def test_share_link_title_is_stored_replaced(team: Any, bad: str) -> None:
    run, _ = run_create(project=team.project, name="r")
    link, _ = share_create(project=team.project, user=team.editor, kind="run", target=run.public_id,
                           title=f"title {bad}")
    assert ShareLink.objects.get(pk=link.pk).title == f"title {STORED}"


@pytest.mark.parametrize("bad", BAD)
def test_comparison_share_with_bad_characters_stores_them_replaced(team: Any, bad: str) -> None:
    first, _ = run_create(project=team.project, name="first")
    # Compared runs may be named instead of given by id; names are stored cleaned.
    second, _ = run_create(project=team.project, name=f"second {STORED}")
    link, _ = share_create(project=team.project, user=team.editor, kind="comparison", target="",
                           title=f"cmp {bad}", params={"runs": [first.public_id, f"second {bad}"]})
    stored = ShareLink.objects.get(pk=link.pk)
    assert stored.title == f"cmp {STORED}"
    assert stored.params == {"runs": [first.public_id, second.public_id]}


@pytest.mark.parametrize("bad", BAD)
def test_share_target_with_bad_characters_is_just_not_found(team: Any, bad: str) -> None:
    for kind in ("run", "rollout", "example"):
        with pytest.raises(ShareError, match="target: "):
            share_create(project=team.project, user=team.editor, kind=kind, target=f"r{bad}")
    assert not ShareLink.objects.exists()
