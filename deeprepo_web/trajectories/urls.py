from __future__ import annotations

from django.urls import path

from deeprepo_web.trajectories import views

RUN = "p/<slug:slug>/runs/<str:run_id>/"

urlpatterns = [
    path(f"{RUN}rollouts/", views.rollouts, name="rollouts"),
    path(f"{RUN}groups/", views.groups, name="groups"),
    path(f"{RUN}rollouts/<int:rollout_id>/", views.trajectory, name="trajectory"),
    path(f"{RUN}rollouts/<int:rollout_id>/turns/", views.trajectory_turns, name="trajectory_turns"),
    path(f"{RUN}rollouts/<int:rollout_id>/body/<str:kind>/<int:object_id>/", views.trajectory_body,
         name="trajectory_body"),
    path("p/<slug:slug>/examples/<int:example_id>/", views.example, name="example"),
    path("p/<slug:slug>/examples/<int:example_id>/compare/", views.example_compare, name="example_compare"),
]
