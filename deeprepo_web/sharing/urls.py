from __future__ import annotations

from django.urls import path

from deeprepo_web.sharing import views

urlpatterns = [
    path("s/<str:token>", views.shared, name="shared"),
    path("p/<slug:slug>/shares/", views.share_list, name="shares"),
    path("p/<slug:slug>/shares/new/", views.share_new, name="share_new"),
    path("p/<slug:slug>/shares/<int:link_id>/revoke/", views.share_revoke_view, name="share_revoke"),
]
