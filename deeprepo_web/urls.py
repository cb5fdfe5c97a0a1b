from __future__ import annotations

from django.urls import include, path

from deeprepo_web.api_root import api

urlpatterns = [
    path("api/", api.urls),
    path("", include("deeprepo_web.otlp.urls")),
    path("", include("deeprepo_web.wandb_server.urls")),
    path("", include("deeprepo_web.mlflow_server.urls")),
    path("", include("deeprepo_web.front.urls")),
]
