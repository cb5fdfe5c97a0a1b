from __future__ import annotations

from django.urls import path

from deeprepo_web.explorer import views

urlpatterns = [
    path("r/<str:run_id>/", views.run_redirect, name="run_short"),
    path("p/<slug:slug>/", views.project, name="project"),
    path("p/<slug:slug>/rows/", views.project_rows, name="project_rows"),
    path("p/<slug:slug>/columns/", views.project_columns, name="project_columns"),
    path("p/<slug:slug>/runs/<str:run_id>/", views.run_detail, name="run"),
    path("p/<slug:slug>/runs/<str:run_id>/delete/", views.run_delete, name="run_delete"),
    path("p/<slug:slug>/runs/<str:run_id>/live/", views.run_live, name="run_live"),
    path("p/<slug:slug>/runs/<str:run_id>/health/", views.run_health, name="run_health"),
]
