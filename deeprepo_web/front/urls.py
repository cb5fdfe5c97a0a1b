from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import include, path

from deeprepo_web.front import settings_views, views
from deeprepo_web.front.login import RateLimitedLoginView

# Each area keeps its own URL module; add one include line here.
urlpatterns = [
    path("login/", RateLimitedLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.home, name="home"),
    path("", include("deeprepo_web.front.explorer_urls")),
    path("r/<str:run_id>/", views.run_redirect, name="run_short"),
    path("p/<slug:slug>/settings/", settings_views.project_settings, name="project_settings"),
    path("p/<slug:slug>/settings/keys/", settings_views.key_create, name="key_create"),
    path("p/<slug:slug>/settings/keys/<int:key_id>/revoke/", settings_views.key_revoke, name="key_revoke"),
    path("p/<slug:slug>/settings/members/", settings_views.member_set, name="member_set"),
    path("p/<slug:slug>/settings/members/<int:membership_id>/remove/", settings_views.member_remove,
         name="member_remove"),
    path("", include("deeprepo_web.front.compare_urls")),
    path("", include("deeprepo_web.sharing.urls")),
    path("", include("deeprepo_web.front.trajectory_urls")),
    path("", include("deeprepo_web.artifacts.urls")),
    path("", include("deeprepo_web.importers.urls")),
    path("", include("deeprepo_web.jobs.urls")),
]
