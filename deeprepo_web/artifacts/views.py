"""Pages and endpoints of artifacts and blobs: the run's Artifacts tab, downloads, the blob view,
and the filesystem store's signed PUT/GET (what presigned URLs are for S3)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core import signing
from django.db.models import Count, Sum
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseRedirect,
    JsonResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from deeprepo_web import storage
from deeprepo_web.accounts import access
from deeprepo_web.artifacts import services
from deeprepo_web.artifacts.models import Artifact
from deeprepo_web.front.http import is_htmx
from deeprepo_web.front.paging import cursor_param, keyset_page, newest_first, pager_for
from deeprepo_web.runs.access import run_for_user
from deeprepo_web.runs.models import BlobRef

PER_PAGE = 100
# A blob is served as data, never as a page: no scripts, no plugins, not even same-origin.
_BLOB_CSP = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox"



@login_required
@require_GET
def artifact_list(request: HttpRequest, slug: str, run_id: str) -> HttpResponse:
    run = run_for_user(request.user, run_id, slug=slug)
    kind = request.GET.get("kind", "")
    rows = Artifact.objects.filter(run=run)
    # One small GROUP BY on the run's own rows: the kind chips and the totals line.
    kinds = list(rows.values("kind").annotate(n=Count("pk"), bytes=Sum("size")).order_by("kind"))
    if kind:
        rows = rows.filter(kind=kind)
    page = keyset_page(rows, keys=newest_first(), order="artifacts", cursor=cursor_param(request), per_page=PER_PAGE)
    # Imported images (W&B media) are also blobs of the run: those get a thumbnail from the blob view.
    shas = [a.sha256 for a in page.rows if a.kind == "image"]
    thumbs = set(BlobRef.objects.filter(run=run, sha__in=shas).values_list("sha", flat=True)) if shas else set()
    context = {
        "project": run.project,
        "run": run,
        "artifacts": page.rows,
        "pager": pager_for(request, page, label="Artifact pages", noun="artifact"),
        "thumbs": thumbs,
        "kind": kind,
        "kinds": kinds,
        "total": sum(k["n"] for k in kinds),
        "total_bytes": sum(k["bytes"] or 0 for k in kinds),
        "can_write": access.can_write(request.user, run.project),
        "backend": storage.backend().name,
    }
    return render(request, "artifacts/list.html", context)


@login_required
@require_GET
def artifact_download(request: HttpRequest, slug: str, run_id: str, artifact_id: int) -> HttpResponse:
    """The URL is made at click time, so a page left open never holds a live download link."""
    run = run_for_user(request.user, run_id, slug=slug)
    artifact = get_object_or_404(Artifact.objects, run=run, pk=artifact_id)
    try:
        url = services.artifact_download_url(artifact=artifact, ttl=300)
    except (services.ArtifactError, storage.StorageError) as exc:
        return HttpResponse(f"Cannot download: {exc}", status=409, content_type="text/plain; charset=utf-8")
    return HttpResponseRedirect(url)


@login_required
@require_POST
def artifact_delete(request: HttpRequest, slug: str, run_id: str, artifact_id: int) -> HttpResponse:
    run = run_for_user(request.user, run_id, slug=slug, write=True)  # viewers get 404
    artifact = get_object_or_404(Artifact.objects, run=run, pk=artifact_id)
    try:
        services.artifact_delete(artifact=artifact)
    except storage.StorageError as exc:
        message = f"Not deleted: {exc}"
        if is_htmx(request):
            return render(request, "artifacts/list.html#error-row", {"message": message}, status=503)
        return HttpResponse(message, status=503, content_type="text/plain; charset=utf-8")
    if is_htmx(request):
        return HttpResponse("")  # the row swaps itself out
    return redirect("artifacts", slug=slug, run_id=run_id)


@login_required
@require_GET
def blob(request: HttpRequest, slug: str, sha: str) -> HttpResponse:
    """A blob to a member of a project whose rollouts use it. Images inline, text as text/plain.

    With ?t=<token> (from `blob_url`), the token must also be valid and unexpired.
    """
    project, _ = access.project_for_user(request.user, slug)
    if not storage.is_sha256(sha):
        raise Http404("no such blob")
    token = request.GET.get("t")
    if token is not None:
        try:
            payload = storage.signed_payload(token, salt=storage.BLOB_SALT)
        except signing.BadSignature:
            raise Http404("link expired or invalid") from None
        if payload.get("k") != storage.blob_key(sha) or payload.get("p") != slug:
            raise Http404("no such blob")
    if not BlobRef.objects.filter(sha=sha, run__project=project).exists():
        raise Http404("no such blob")
    try:
        data = storage.blob_get(sha)
    except FileNotFoundError:
        raise Http404("blob missing from the store") from None
    except storage.StorageError as exc:
        return HttpResponse(f"Store unavailable: {exc}", status=503, content_type="text/plain; charset=utf-8")
    content_type = storage.sniff_content_type(data)
    if is_htmx(request) and content_type.startswith("text/"):
        # "Load all" swaps this in as HTML: the text goes through autoescaping.
        text = data.decode("utf-8", "replace")
        return render(request, "artifacts/blob_text.html", {"text": text, "size": len(data)})
    response = HttpResponse(data, content_type=content_type)
    if content_type == "application/octet-stream":
        response["Content-Disposition"] = f'attachment; filename="{sha[:16]}.bin"'
    response["Content-Security-Policy"] = _BLOB_CSP
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, max-age=3600"  # content addressed: never changes
    return response


# ---------------------------------------------------------------- filesystem store: signed PUT / GET


def _json_error(message: str, status: int) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


@csrf_exempt  # authorised by the signed token in the URL, like a presigned S3 URL
@require_http_methods(["PUT"])
def storage_put(request: HttpRequest, token: str) -> HttpResponse:
    try:
        payload = storage.signed_payload(token, salt=storage.PUT_SALT)
    except signing.SignatureExpired:
        return _json_error("upload URL expired; ask for a new one", 403)
    except signing.BadSignature:
        return _json_error("upload URL signature is invalid", 403)
    artifact = Artifact.objects.filter(pk=int(payload.get("a") or 0), storage_key=str(payload.get("k"))).first()
    if artifact is None:
        return _json_error("no such upload (deleted or cleaned up)", 404)
    if artifact.status != "pending":
        return _json_error("this artifact is already uploaded", 409)
    if request.META.get("HTTP_TRANSFER_ENCODING"):
        return _json_error("Content-Length header is required (no chunked uploads)", 411)
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)  # no header and no body: an empty file
    except ValueError:
        return _json_error("Content-Length header is not a number", 400)
    try:
        services.artifact_receive(artifact=artifact, stream=request, length=length)  # type: ignore[arg-type]
    except services.ArtifactError as exc:
        return _json_error(str(exc), 400)
    return JsonResponse({"ok": True, "size": artifact.size, "sha256": artifact.sha256})


@require_GET
def storage_get(request: HttpRequest, token: str) -> HttpResponse | FileResponse:
    try:
        payload = storage.signed_payload(token, salt=storage.GET_SALT)
    except signing.SignatureExpired:
        return HttpResponse("Download link expired.", status=403, content_type="text/plain")
    except signing.BadSignature:
        return HttpResponse("Download link is invalid.", status=403, content_type="text/plain")
    store = storage.backend()
    if not isinstance(store, storage.FilesystemBackend):
        raise Http404
    try:
        path = store.path(str(payload.get("k")))
        fh = open(path, "rb")  # noqa: SIM115 - FileResponse closes it
    except (FileNotFoundError, storage.StorageError):
        raise Http404("no such object") from None
    response = FileResponse(fh, as_attachment=True, filename=str(payload.get("n") or "download"),
                            content_type="application/octet-stream")
    response["X-Content-Type-Options"] = "nosniff"
    return response
