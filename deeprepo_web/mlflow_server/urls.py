"""MLflow's REST paths at the site root, where `MLFLOW_TRACKING_URI=http://HOST:PORT` makes clients look."""

from __future__ import annotations

from django.urls import path, re_path

from deeprepo_web.mlflow_server import artifacts, traces, views

urlpatterns = [
    path("version", views.version, name="mlflow_version"),
    path("api/3.0/mlflow/traces", traces.start_trace, name="mlflow_start_trace"),
    path("api/3.0/mlflow/server-info", views.server_info, name="mlflow_server_info"),
    path("api/2.0/mlflow-artifacts/artifacts", artifacts.artifact_list, name="mlflow_artifact_list"),
    re_path(r"^api/2\.0/mlflow-artifacts/artifacts/(?P<path>.+)$", artifacts.artifact, name="mlflow_artifact"),
    re_path(r"^api/2\.0/mlflow/(?P<endpoint>[a-z\-/]+)$", views.tracking, name="mlflow_tracking"),
]
