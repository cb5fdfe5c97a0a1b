from __future__ import annotations

import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")
application = get_wsgi_application()


def _warm_up() -> None:
    """Import the URL conf (every view module, the API) and build its reverse index now, at worker
    start (or once in gunicorn's master with --preload): a cold worker's first request paid 5-9 s."""
    from django.urls import get_resolver

    resolver = get_resolver()
    resolver.url_patterns  # noqa: B018 - the import is the point
    resolver.reverse_dict  # noqa: B018


_warm_up()

# What start-up made (settings, apps, models, URL patterns) lives as long as the process. Frozen, it
# is no longer walked by the collector's full passes, which under load took ~100 ms each and held
# every request of the worker meanwhile. The first generation is also collected less often: a page
# makes tens of thousands of short-lived objects, which reference counting frees anyway.
gc.collect()
gc.freeze()
gc.set_threshold(20_000, 20, 20)
