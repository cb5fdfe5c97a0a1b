"""Every page's URL: site-wide ones here, each feature's from its own urls module (add one include line)."""

from __future__ import annotations

from django.urls import include, path
from mozilla_django_oidc.views import OIDCLogoutView

from deeprepo_web.front import views
from deeprepo_web.front.login import RateLimitedLoginView

urlpatterns = [
    path("login/", RateLimitedLoginView.as_view(), name="login"),
    # POST only: ends the session, and an SSO session's at the provider too (sso/views.provider_logout_url).
    path("logout/", OIDCLogoutView.as_view(), name="logout"),
    path("", include("deeprepo_web.sso.urls")),
    path("", views.home, name="home"),
    path("", include("deeprepo_web.explorer.urls")),
    path("", include("deeprepo_web.accounts.urls")),
    path("", include("deeprepo_web.compare.urls")),
    path("", include("deeprepo_web.sharing.urls")),
    path("", include("deeprepo_web.trajectories.urls")),
    path("", include("deeprepo_web.artifacts.urls")),
    path("", include("deeprepo_web.importers.urls")),
    path("", include("deeprepo_web.jobs.urls")),
    path("", include("deeprepo_web.sweeps.urls")),
    path("", include("deeprepo_web.checkpoint_evals.urls")),
    path("", include("deeprepo_web.search.urls")),
    path("", include("deeprepo_web.labels.urls")),
    path("", include("deeprepo_web.judge.urls")),
    path("", include("deeprepo_web.audit.urls")),
    path("", include("deeprepo_web.retention.urls")),
    path("", include("deeprepo_web.reports.urls")),
]
