from __future__ import annotations

from django.urls import path

from deeprepo_web.compare import views

urlpatterns = [
    path("p/<slug:slug>/compare/", views.compare, name="compare"),
    path("p/<slug:slug>/prices/", views.prices, name="prices"),
    path("p/<slug:slug>/prices/save/", views.price_save, name="price_save"),
    path("p/<slug:slug>/runs/<str:run_id>/checkpoints/", views.checkpoints, name="checkpoints"),
    path("p/<slug:slug>/runs/<str:run_id>/rollouts/<int:rollout_id>/patch/", views.patch_view, name="patch_view"),
]
