"""Create, resolve and revoke share links. Only the sha256 of a token is stored."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from deeprepo_web.accounts.models import Project
from deeprepo_web.compare.options import CompareError
from deeprepo_web.compare.query import comparison_for
from deeprepo_web.runs.models import Example, Rollout, Run
from deeprepo_web.sharing.models import ShareKind, ShareLink, new_token, token_hash
from deeprepo_web.text import clean_deep, clean_text

MAX_EXPIRY_DAYS = 3650
COMPARISON_KEYS = ("baseline", "zero", "pass", "effects")


class ShareError(ValueError):
    """Bad input for a share link; the message names the field."""


def share_create(
    *,
    project: Project,
    user: Any,
    kind: str,
    target: str,
    title: str = "",
    expires_in_days: int | None = None,
    params: dict[str, Any] | None = None,
) -> tuple[ShareLink, str]:
    """Returns (link, token). The token is not stored: show it once."""
    # Callers pass raw request text; Postgres refuses NUL and lone surrogates, even in a lookup.
    title, target, params = clean_text(title), clean_text(target or ""), clean_deep(params or {})
    if kind not in ShareKind.values:
        raise ShareError(f"kind: must be one of {', '.join(ShareKind.values)}")
    if expires_in_days is not None and not 1 <= expires_in_days <= MAX_EXPIRY_DAYS:
        raise ShareError(f"expires: between 1 and {MAX_EXPIRY_DAYS} days, or never")
    link = ShareLink(project=project, kind=kind, title=title.strip()[:200], created_by=user)
    target = target.strip()
    if kind == ShareKind.RUN:
        run = Run.objects.filter(project=project, public_id=target).first()
        if run is None:
            raise ShareError("target: no such run in this project")
        link.run = run
    elif kind == ShareKind.ROLLOUT:
        rollout = Rollout.objects.filter(run__project=project, pk=_int(target)).select_related("run").first()
        if rollout is None:
            raise ShareError("target: no such rollout in this project")
        link.rollout, link.run = rollout, rollout.run
    elif kind == ShareKind.EXAMPLE:
        example = Example.objects.filter(project=project, pk=_int(target)).first()
        if example is None:
            raise ShareError("target: no such example in this project")
        link.example = example
    elif kind == ShareKind.REPORT:
        from deeprepo_web.reports.models import Report  # reports import sharing's views' helpers

        report = Report.objects.filter(project=project, public_id=target).first()
        if report is None:
            raise ShareError("target: no such report in this project")
        if report.published_id is None:
            raise ShareError("target: publish the report first; a link shows its published version")
        link.report = report
    else:
        runs = [str(r) for r in params.get("runs") or []]
        raw = {k: str(params.get(k) or "")[:500] for k in COMPARISON_KEYS}
        try:
            c = comparison_for(project, runs, raw)  # validates: runs of this project, options well-formed
        except CompareError as exc:
            raise ShareError(str(exc)) from None
        link.params = {"runs": [d.run.public_id for d in c.runs], **{k: v for k, v in raw.items() if v}}
    if expires_in_days:
        link.expires_at = timezone.now() + timedelta(days=expires_in_days)
    token = new_token()
    link.token_hash = token_hash(token)
    link.token_prefix = token[:6]
    link.save()
    return link, token


def _int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ShareError("target: must be a number") from None


def share_resolve(*, token: str) -> ShareLink | None:
    """The active link for a token (counting the view), or None for unknown, revoked or expired."""
    if not token or len(token) > 200:
        return None
    link = (
        ShareLink.objects.select_related("project", "run", "rollout__run", "rollout__example", "example", "report")
        .filter(token_hash=token_hash(token))
        .first()
    )
    if link is None or not link.is_active:
        return None
    with transaction.atomic():
        ShareLink.objects.filter(pk=link.pk).update(views=F("views") + 1, last_viewed_at=timezone.now())
    return link


def share_revoke(*, link: ShareLink) -> None:
    ShareLink.objects.filter(pk=link.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
