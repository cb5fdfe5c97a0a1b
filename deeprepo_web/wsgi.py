from __future__ import annotations

import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")
application = get_wsgi_application()

# What start-up made (settings, apps, models, URL patterns) lives as long as the process. Frozen, it
# is no longer walked by the collector's full passes, which under load took ~100 ms each and held
# every request of the worker meanwhile. The first generation is also collected less often: a page
# makes tens of thousands of short-lived objects, which reference counting frees anyway.
gc.collect()
gc.freeze()
gc.set_threshold(20_000, 20, 20)
