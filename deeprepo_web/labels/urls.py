from __future__ import annotations

from django.urls import path

from deeprepo_web.labels import views

urlpatterns = [
    path("p/<slug:slug>/labels/", views.labels, name="labels"),
    path("p/<slug:slug>/runs/<str:run_id>/rollouts/<int:rollout_id>/marks/", views.mark_add, name="mark_add"),
    path("p/<slug:slug>/marks/<int:mark_id>/delete/", views.mark_delete, name="mark_delete"),
    path("p/<slug:slug>/marks/<int:mark_id>/review/", views.mark_review, name="mark_review"),
]
