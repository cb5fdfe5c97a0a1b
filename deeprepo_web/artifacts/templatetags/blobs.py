"""`{% load blobs %}{% blob_url project.slug sha %}`: a short-lived URL of a blob for <img> or "load all".

It points at the web app's `blob` view (membership and project checked on every request,
within the page's CSP) with a signed expiry, so a copied link stops working after `ttl` seconds.
"""

from __future__ import annotations

from django import template
from django.urls import reverse

from deeprepo_web import storage

register = template.Library()


@register.simple_tag
def blob_url(project_slug: str, sha: str, ttl: int = 900) -> str:
    if not storage.is_sha256(sha):
        return ""
    token = storage.signed_token({"k": storage.blob_key(sha), "p": project_slug}, salt=storage.BLOB_SALT, ttl=ttl)
    return reverse("blob", args=[project_slug, sha]) + f"?t={token}"
