"""What each GraphQL field answers. Every one works inside the API key's project (Context.key)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from graphql import GraphQLError, GraphQLResolveInfo

from deeprepo_web.accounts.models import ApiKey
from deeprepo_web.runs.axes import metric_axes_set
from deeprepo_web.runs.models import Run
from deeprepo_web.wandb_server import mapping
from deeprepo_web.wandb_server.buckets import bucket_node, project_node
from deeprepo_web.wandb_server.models import RunAlert
from deeprepo_web.wandb_server.uploads import upload_url

# The newest SDK release this server was checked with is far below this: the SDK warns about
# nothing and turns off nothing.
CLI_VERSION_INFO = {"min_cli_version": "0.10.0", "max_cli_version": "100.0.0"}


@dataclass
class Context:
    key: ApiKey
    request: HttpRequest


Info = GraphQLResolveInfo


def _ctx(info: Info) -> Context:
    ctx: Context = info.context
    return ctx


def viewer(_: Any, info: Info) -> dict[str, Any]:
    key = _ctx(info).key
    user = key.user
    return {"id": f"key-{key.pk}", "entity": key.project.slug, "username": getattr(user, "username", "") or "api",
            "email": getattr(user, "email", "") or "", "name": key.name, "admin": False, "flags": "{}",
            "teams": {"edges": []}, "apiKeys": {"edges": []}}


def server_info(_: Any, info: Info) -> dict[str, Any]:
    return {"cliVersionInfo": CLI_VERSION_INFO, "features": [], "availableBucketProviders": [],
            "latestLocalVersionInfo": {"outOfDate": False, "latestVersionString": "deeprepo",
                                       "versionOnThisInstanceString": "deeprepo"}}


def project(_: Any, info: Info, name: str | None = None, entityName: str | None = None) -> dict[str, Any]:  # noqa: N803
    return project_node(_ctx(info).key.project.slug, name)


def entity(_: Any, info: Info, name: str | None = None) -> dict[str, Any]:
    slug = _ctx(info).key.project.slug
    return {"id": slug, "name": slug, "isTeam": False}


def _run(parent: dict[str, Any], info: Info, name: str) -> Run | None:
    return mapping.run_find(project=_ctx(info).key.project, wb_project=parent["_wb"], name=name)


def project_bucket(parent: dict[str, Any], info: Info, name: str, missingOk: bool | None = None) -> Any:  # noqa: N803
    """RunResumeStatus: asked only when the SDK is about to continue the run."""
    run = _run(parent, info, name)
    return bucket_node(mapping.run_resume(run=run)) if run is not None else None


def project_run(parent: dict[str, Any], info: Info, name: str) -> Any:
    run = _run(parent, info, name)
    return bucket_node(run) if run is not None else None


def upsert_bucket(_: Any, info: Info, input: dict[str, Any]) -> dict[str, Any]:  # noqa: A002
    if not str(input.get("name") or "").strip():
        raise GraphQLError("upsertBucket: a run name (the W&B run id) is required")
    config = input.get("config")
    values = None
    if isinstance(config, dict):
        # {"key": {"value": v, "desc": …}}; W&B's own bookkeeping (_wandb) is not the user's config.
        values = {k: (v.get("value") if isinstance(v, dict) else v) for k, v in config.items() if k != "_wandb"}
    run, created = mapping.run_upsert(project=_ctx(info).key.project, fields=input, config=values)
    if isinstance(config, dict) and (axes := mapping.metric_axes(config.get("_wandb"))):
        metric_axes_set(run=run, axes=axes)  # define_metric(…, step_metric=…): the charts' "defined x-axis"
    return {"bucket": bucket_node(run), "inserted": created, "updateAvailable": False,
            "serverSettings": {"serverMessages": []}}


def create_run_files(_: Any, info: Info, input: dict[str, Any]) -> dict[str, Any]:  # noqa: A002
    ctx = _ctx(info)
    run, _created = mapping.run_get_or_create(project=ctx.key.project, wb_project=input["projectName"],
                                              name=input["runName"])
    files = [{"name": f, "uploadUrl": upload_url(ctx.request, run=run, name=f)} for f in input["files"]]
    return {"runID": run.public_id, "uploadHeaders": [], "files": files}


def success(*_: Any, **__: Any) -> dict[str, Any]:
    return {"success": True}


def alert(_: Any, info: Info, input: dict[str, Any]) -> dict[str, Any]:  # noqa: A002
    run, _created = mapping.run_get_or_create(project=_ctx(info).key.project, wb_project=input["projectName"],
                                              name=input["runName"])
    RunAlert.objects.create(run=run, title=str(input["title"])[:500], text=str(input.get("text") or ""),
                            severity=str(input.get("severity") or "INFO"))
    return {"success": True}


def upsert_model(_: Any, info: Info, input: dict[str, Any]) -> dict[str, Any]:  # noqa: A002
    node = project_node(_ctx(info).key.project.slug, input.get("name"))
    return {"project": node, "model": node, "inserted": False}


def nothing(*_: Any, **__: Any) -> None:
    """Artifacts are not kept through this API: no type, so the SDK skips what needs one."""
    return None


RESOLVERS: dict[tuple[str, str], Callable[..., Any]] = {
    ("Query", "viewer"): viewer,
    ("Query", "serverInfo"): server_info,
    ("Query", "model"): project,
    ("Query", "project"): project,
    ("Query", "entity"): entity,
    ("Project", "bucket"): project_bucket,
    ("Project", "run"): project_run,
    ("Project", "artifactType"): nothing,
    ("Project", "artifact"): nothing,
    ("Mutation", "upsertBucket"): upsert_bucket,
    ("Mutation", "createRunFiles"): create_run_files,
    ("Mutation", "markRunFilesUploaded"): success,
    ("Mutation", "notifyScriptableRunAlert"): alert,
    ("Mutation", "upsertModel"): upsert_model,
}
