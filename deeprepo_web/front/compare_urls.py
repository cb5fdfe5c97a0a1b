from __future__ import annotations

from django.urls import path

from deeprepo_web.front import compare

urlpatterns = [
    path("p/<slug:slug>/compare/", compare.compare, name="compare"),
    path("p/<slug:slug>/prices/", compare.prices, name="prices"),
    path("p/<slug:slug>/prices/save/", compare.price_save, name="price_save"),
    path("p/<slug:slug>/runs/<str:run_id>/checkpoints/", compare.checkpoints, name="checkpoints"),
    path("p/<slug:slug>/runs/<str:run_id>/rollouts/<int:rollout_id>/patch/", compare.patch_view, name="patch_view"),
]
