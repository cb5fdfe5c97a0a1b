from __future__ import annotations

from django.urls import path

from deeprepo_web.front import explorer

urlpatterns = [
    path("p/<slug:slug>/", explorer.project, name="project"),
    path("p/<slug:slug>/runs/<str:run_id>/", explorer.run_detail, name="run"),
    path("p/<slug:slug>/runs/<str:run_id>/status/", explorer.run_status, name="run_status"),
    path("p/<slug:slug>/runs/<str:run_id>/health/", explorer.run_health, name="run_health"),
]
