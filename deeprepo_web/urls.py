from __future__ import annotations

from django.urls import include, path

from deeprepo_web.api.views import api
from deeprepo_web.artifacts.api import router as artifacts_router

# Areas with their own API routers register them here, before api.urls is built.
api.add_router("/v1", artifacts_router)

urlpatterns = [
    path("api/", api.urls),
    path("", include("deeprepo_web.front.urls")),
]
