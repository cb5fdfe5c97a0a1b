"""W&B paths at the site root: the SDK appends /graphql and /files/… to WANDB_BASE_URL."""

from __future__ import annotations

from django.urls import path

from deeprepo_web.wandb_server import pages, views

urlpatterns = [
    path("p/<slug:slug>/runs/<str:run_id>/logs/", pages.run_logs_page, name="run_logs"),
    path("graphql", views.graphql, name="wandb_graphql"),
    path("files/upload/<str:token>", views.upload, name="wandb_upload"),
    path("files/<str:entity>/<str:project>/<str:run_id>/file_stream", views.file_stream, name="wandb_file_stream"),
]
