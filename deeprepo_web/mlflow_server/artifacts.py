"""The `mlflow-artifacts` proxy: a run's `artifact_uri` is `mlflow-artifacts:/<exp>/<run>/artifacts`,
so the client PUTs, lists and GETs its files here, and they are the run's artifacts (the Artifacts
tab). A JSON file shaped like a table (`mlflow.log_table`: {"columns", "data"}) whose columns look
like rollouts also becomes rollouts; log_table re-uploads the whole grown table each time, and rows
already stored keep their uid, so only the new rows are added."""

from __future__ import annotations

import posixpath
import tempfile
from pathlib import Path
from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase

from deeprepo_client.formats.wandb_tables import rows_rollouts
from deeprepo_web import storage
from deeprepo_web.accounts.models import Project
from deeprepo_web.artifacts.models import Artifact, ArtifactStatus
from deeprepo_web.artifacts.services import (
    ArtifactError,
    artifact_delete,
    artifact_name_check,
    artifact_store_file,
)
from deeprepo_web.importers.writers import rollouts_save
from deeprepo_web.mlflow_server.errors import MlflowError, invalid, missing
from deeprepo_web.mlflow_server.runs import mlflow_run_get
from deeprepo_web.mlflow_server.views import answer, api_key, guarded
from deeprepo_web.runs.models import Run

KIND = "mlflow"
MAX_TABLE = 64 << 20  # bytes of a JSON file read for table rows; bigger ones stay plain artifacts


def _locate(project: Project, path: str) -> tuple[Run, str]:
    """`<exp>/<run id>/artifacts/<name>` → (the run, name); the run must be of the key's project."""
    parts = path.strip("/").split("/", 3)
    if len(parts) < 3 or parts[2] != "artifacts":
        raise missing(f"Artifact path {path!r} is not <experiment id>/<run id>/artifacts/<file>")
    run = mlflow_run_get(project, parts[1])
    name = parts[3] if len(parts) == 4 else ""
    if name:
        try:
            artifact_name_check(name)
        except ArtifactError as exc:
            raise invalid(f"Invalid artifact path {name!r}: {exc}") from exc
    return run, name


def _receive(request: HttpRequest, run: Run, name: str) -> Artifact:
    with tempfile.NamedTemporaryFile(prefix="mlflow-put-") as tmp:
        while chunk := request.read(8 << 20):
            tmp.write(chunk)
        tmp.flush()
        artifact = artifact_store_file(run=run, name=name, kind=KIND, path=Path(tmp.name))
        if name.endswith(".json") and artifact.size <= MAX_TABLE:
            tmp.seek(0)
            _table_rollouts(run, name, tmp.read())
    return artifact


def _table_rollouts(run: Run, name: str, raw: bytes) -> int:
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return 0  # a JSON artifact that is not valid JSON is still stored as the file it is
    if not isinstance(doc, dict) or not isinstance(doc.get("columns"), list) or not isinstance(doc.get("data"), list):
        return 0
    records = [r for r in rows_rollouts(doc["columns"], doc["data"], name, name, 0, run.external_id, Path("."))
               if isinstance(r, dict)]
    stored, _refused = rollouts_save(run, records)  # type: ignore[arg-type]
    return stored


def _listing(run: Run, prefix: str) -> list[dict[str, Any]]:
    """Entries directly under `prefix` (a folder of the run, '' for its root), as MLflow lists them."""
    names = Artifact.objects.filter(run=run, status=ArtifactStatus.READY, kind=KIND)
    if prefix:
        exact = names.filter(name=prefix).values_list("name", "size").first()
        if exact:
            return [{"path": posixpath.basename(exact[0]), "is_dir": False, "file_size": exact[1]}]
        names = names.filter(name__startswith=prefix + "/")
    files: dict[str, dict[str, Any]] = {}
    for name, size in names.values_list("name", "size")[:10_000]:
        rest = name[len(prefix) + 1:] if prefix else name
        head, sep, _ = rest.partition("/")
        files[head] = {"path": head, "is_dir": True} if sep else {"path": head, "is_dir": False, "file_size": size}
    return sorted(files.values(), key=lambda f: f["path"])


@guarded
def artifact(request: HttpRequest, path: str) -> HttpResponseBase:
    key = api_key(request, write=request.method in ("PUT", "DELETE"))
    run, name = _locate(key.project, path)
    if request.method == "PUT":
        if not name:
            raise invalid("PUT needs a file path after <experiment id>/<run id>/artifacts/")
        _receive(request, run, name)
        return answer({})
    found = Artifact.objects.filter(run=run, name=name, kind=KIND, status=ArtifactStatus.READY).first()
    if request.method == "DELETE":
        for a in Artifact.objects.filter(run=run, kind=KIND, name__startswith=name):
            if a.name == name or a.name.startswith(name.rstrip("/") + "/"):
                artifact_delete(artifact=a)
        return answer({})
    if request.method != "GET":
        raise MlflowError("ENDPOINT_NOT_FOUND", f"{request.method} is not served for artifacts")
    if found is None:
        raise missing(f"Artifact '{name}' of run '{run.external_id}' not found")
    response = StreamingHttpResponse(storage.backend().iter_chunks(found.storage_key),
                                     content_type="application/octet-stream")
    response["Content-Length"] = str(found.size)
    return response


@guarded
def artifact_list(request: HttpRequest) -> HttpResponse:
    key = api_key(request, write=False)
    run, name = _locate(key.project, request.GET.get("path", ""))
    return answer({"files": _listing(run, name.strip("/"))})
