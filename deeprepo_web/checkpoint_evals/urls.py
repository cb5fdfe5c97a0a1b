from __future__ import annotations

from django.urls import path

from deeprepo_web.checkpoint_evals import views

urlpatterns = [
    path("p/<slug:slug>/runs/<str:run_id>/checkpoint-evals/", views.rules, name="checkpoint_rules"),
]
