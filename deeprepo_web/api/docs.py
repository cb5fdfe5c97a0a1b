"""/api/docs: Swagger UI from our own static files (scripts/vendor.sh pins them), so it works offline and
under the site's CSP (no CDN, no inline script: its settings reach api-docs.js as a JSON element)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from ninja.openapi.docs import DocsBase

if TYPE_CHECKING:
    from ninja import NinjaAPI


class VendoredSwagger(DocsBase):
    def render_page(self, request: HttpRequest, api: NinjaAPI, **kwargs: Any) -> HttpResponse:
        settings = {"url": self.get_openapi_url(api, kwargs), "deepLinking": True}
        return render(request, "api/docs.html", {"api": api, "swagger_settings": settings})
