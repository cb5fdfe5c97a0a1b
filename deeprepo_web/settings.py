"""The only settings file: every value comes from the environment (see .env.example)."""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from deeprepo_web.embedded_db import data_dir
from deeprepo_web.env import (
    database_from_url,
    env_bool,
    env_int,
    env_list,
    env_role_map,
    env_str,
    secret_key_from_file,
)

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = data_dir()

DEBUG = env_bool("DEBUG", False)
# Without SECRET_KEY, one is generated once and kept in the data directory (a single-machine install).
SECRET_KEY = env_str("SECRET_KEY", "") or secret_key_from_file(DATA_DIR / "secret_key")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
SITE_URL = env_str("SITE_URL", "http://127.0.0.1:8000")

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django.contrib.postgres",
    "django_htmx",
    "template_partials",
    "deeprepo_web.front",  # its template tags: the status badge
    "deeprepo_web.accounts",
    "deeprepo_web.runs",
    "deeprepo_web.jobs",
    "deeprepo_web.sharing",
    "deeprepo_web.importers",
    "deeprepo_web.artifacts",
    "deeprepo_web.explorer",
    "deeprepo_web.trajectories",
    "deeprepo_web.compare",
    "deeprepo_web.otlp",
    "deeprepo_web.wandb_server",
    "deeprepo_web.mlflow_server",
    "deeprepo_web.labels",
    "deeprepo_web.search",
    "deeprepo_web.judge",
    "deeprepo_web.audit",
    "deeprepo_web.ops",
    "deeprepo_web.retention",
    "deeprepo_web.reports",
    "deeprepo_web.sso",
    "deeprepo_web.sweeps",
    "deeprepo_web.checkpoint_evals",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "deeprepo_web.ratelimit.RateLimitMiddleware",
    "deeprepo_web.front.middleware.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "deeprepo_web.audit.context.AuditActorMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "deeprepo_web.front.middleware.BadCursorMiddleware",
]

ROOT_URLCONF = "deeprepo_web.urls"
WSGI_APPLICATION = "deeprepo_web.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # The checkout's templates/, or the copy a wheel carries inside the package (pyproject.toml).
        "DIRS": [BASE_DIR / "templates", BASE_DIR / "deeprepo_web" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    }
]

DATABASES = {"default": database_from_url(env_str("DATABASE_URL"))}
DATABASES["default"]["TEST"] = {"NAME": env_str("DEEPREPO_TEST_DB", "test_deeprepo")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# PgBouncer in transaction mode in front of DATABASE_URL: a session's server connection changes between
# transactions, so no cursor may outlive one (exports make theirs inside their transaction, ops/pg.py)
# and no statement is prepared (PgBouncer < 1.21 cannot route them).
if env_bool("DEEPREPO_PGBOUNCER", False):
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
    DATABASES["default"]["OPTIONS"] = {"prepare_threshold": None}

# A streaming read replica for page reads (deeprepo_web/replica). Unset: everything on "default".
DEEPREPO_REPLICA_MAX_LAG_SECONDS = env_int("DEEPREPO_REPLICA_MAX_LAG_SECONDS", 5)
DEEPREPO_REPLICA_CHECK_SECONDS = env_int("DEEPREPO_REPLICA_CHECK_SECONDS", 2)
DEEPREPO_READ_YOUR_WRITES_SECONDS = env_int("DEEPREPO_READ_YOUR_WRITES_SECONDS", 15)
_replica_url = env_str("DEEPREPO_REPLICA_URL", "")
if _replica_url:
    if DEEPREPO_READ_YOUR_WRITES_SECONDS < DEEPREPO_REPLICA_MAX_LAG_SECONDS + DEEPREPO_REPLICA_CHECK_SECONDS:
        # Else a user could read the replica before it holds their own write.
        raise ImproperlyConfigured("DEEPREPO_READ_YOUR_WRITES_SECONDS must be at least "
                                   "DEEPREPO_REPLICA_MAX_LAG_SECONDS + DEEPREPO_REPLICA_CHECK_SECONDS")
    DATABASES["replica"] = database_from_url(_replica_url)
    DATABASES["replica"]["OPTIONS"] = {"connect_timeout": 2}
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}
    DATABASE_ROUTERS = ["deeprepo_web.replica.router.ReplicaRouter"]
    MIDDLEWARE.insert(MIDDLEWARE.index("django.contrib.sessions.middleware.SessionMiddleware"),
                      "deeprepo_web.replica.middleware.ReplicaReadsMiddleware")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
]
LOGIN_URL = "login"
# Failed logins per (address, username) before a pause, and the pause.
LOGIN_MAX_FAILURES = env_int("DEEPREPO_LOGIN_MAX_FAILURES", 10)
LOGIN_LOCKOUT_SECONDS = env_int("DEEPREPO_LOGIN_LOCKOUT_SECONDS", 900)

# Shared by every web process of one machine (login limits); Redis when REDIS_CACHE_URL is set.
_redis_cache = env_str("REDIS_CACHE_URL", "")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _redis_cache}
    if _redis_cache
    else {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": str(DATA_DIR / "cache")}
}
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Single sign-on with OpenID Connect (authorization code + PKCE, mozilla-django-oidc; deeprepo_web/sso):
# on when DEEPREPO_OIDC_ISSUER is set. The provider's endpoints come from its discovery document.
# Local accounts keep working beside it.
DEEPREPO_OIDC_ISSUER = env_str("DEEPREPO_OIDC_ISSUER", "").rstrip("/")
DEEPREPO_OIDC_PROVIDER_NAME = env_str("DEEPREPO_OIDC_PROVIDER_NAME", "single sign-on")
OIDC_RP_CLIENT_ID = env_str("DEEPREPO_OIDC_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = env_str("DEEPREPO_OIDC_CLIENT_SECRET", "")
if DEEPREPO_OIDC_ISSUER and not OIDC_RP_CLIENT_ID:
    raise ImproperlyConfigured("DEEPREPO_OIDC_ISSUER is set: DEEPREPO_OIDC_CLIENT_ID is required too")
OIDC_RP_SIGN_ALGO = env_str("DEEPREPO_OIDC_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = env_str("DEEPREPO_OIDC_SCOPES", "openid email profile")
OIDC_USE_PKCE = True
OIDC_STORE_ID_TOKEN = True  # sent back as id_token_hint when logging out at the provider
OIDC_TIMEOUT = 10
OIDC_CREATE_USER = env_bool("DEEPREPO_OIDC_CREATE_USERS", True)
OIDC_OP_LOGOUT_URL_METHOD = "deeprepo_web.sso.views.provider_logout_url"
LOGIN_REDIRECT_URL_FAILURE = "/login/?sso=failed"
# The claim whose values map to project roles (a list or one string; dots walk into objects, e.g.
# "realm_access.roles"), and the map: "<value>=<project slug>:<viewer|editor|admin>,…". For the
# projects the map names, the provider decides an SSO user's role at each login (and removes it
# when no value grants one); other projects' members are managed on the settings page.
DEEPREPO_OIDC_ROLES_CLAIM = env_str("DEEPREPO_OIDC_ROLES_CLAIM", "groups")
DEEPREPO_OIDC_ROLE_MAP = env_role_map("DEEPREPO_OIDC_ROLE_MAP")
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "deeprepo_web.sso.backend.SsoBackend",
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "deeprepo_web" / "static"]
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns on every start without it
# Static files are served by the app itself (whitenoise), straight from the source folders.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
# Behind a proxy that terminates TLS: trust its X-Forwarded-Proto, so absolute URLs built from the
# request (the SSO redirect and post-logout URIs) say https. Only when the proxy sets that header.
if env_bool("DEEPREPO_TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# API bodies: a batch may hold multi-MB tool outputs, but a 50 MB body is refused with 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DEEPREPO_MAX_BODY_BYTES", 32 * 1024 * 1024)
DATA_UPLOAD_MAX_NUMBER_FIELDS = 10_000
# Text bodies above this go to the blob store; the row keeps a preview and a reference.
DEEPREPO_BLOB_THRESHOLD = env_int("DEEPREPO_BLOB_THRESHOLD", 256 * 1024)

# Storage: the filesystem under DATA_DIR unless an S3 bucket is named.
DEEPREPO_S3_BUCKET = env_str("DEEPREPO_S3_BUCKET", "")
DEEPREPO_S3_ENDPOINT_URL = env_str("DEEPREPO_S3_ENDPOINT_URL", "")
DEEPREPO_S3_REGION = env_str("DEEPREPO_S3_REGION", "us-east-1")
# The S3 endpoint as clients outside this host reach it (presigned URLs); defaults to the endpoint above.
DEEPREPO_S3_PUBLIC_ENDPOINT_URL = env_str("DEEPREPO_S3_PUBLIC_ENDPOINT_URL", "")
# Artifacts: a file at or above this size is uploaded in parts of this size (S3 only).
DEEPREPO_ARTIFACT_PART_BYTES = env_int("DEEPREPO_ARTIFACT_PART_BYTES", 64 * 1024 * 1024)
# Lifetime of presigned / signed upload and download URLs, in seconds.
DEEPREPO_ARTIFACT_URL_TTL = env_int("DEEPREPO_ARTIFACT_URL_TTL", 3600)
# An upload not confirmed within this many seconds is removed by the beat task artifacts_cleanup.
DEEPREPO_ARTIFACT_UPLOAD_TIMEOUT = env_int("DEEPREPO_ARTIFACT_UPLOAD_TIMEOUT", 24 * 3600)

# Celery: with no broker URL, a filesystem broker under DATA_DIR needs no server (one machine).
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
if CELERY_BROKER_URL == "filesystem://":
    # With a host name: without one kombu warns "No hostname was supplied" on every connection.
    CELERY_BROKER_URL = "filesystem://localhost//"
    _broker_dir = DATA_DIR / "broker"
    for _sub in ("out", "processed", "control"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)  # kombu does not create them
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "out"),
        "data_folder_out": str(_broker_dir / "out"),
        "processed_folder": str(_broker_dir / "processed"),
        # The exchange tables (celery.exchange, celery.pidbox.exchange): kombu's default is
        # "control" in whatever directory a worker or web process started in.
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "celery")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
CELERY_TIMEZONE = "UTC"
if CELERY_BROKER_URL.startswith("redis"):
    # A task whose worker died unacked comes back after this long (dispatch is safe to repeat).
    _visibility = env_int("DEEPREPO_CELERY_VISIBILITY_TIMEOUT", 600)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": _visibility,
        # kombu looks for such tasks only every interval x throttle seconds (10 x 10 by default),
        # so a running worker would leave a dead peer's task waiting up to ~100 s past the
        # timeout: sweep on every tick instead, at a tenth of the timeout (one cheap ZRANGE each).
        "unacked_restore_interval": max(1, min(10, _visibility // 10)),
        "unacked_restore_throttle": 1,
    }
# Jobs: follow every active job's state and log tail this often (seconds).
DEEPREPO_JOB_SYNC_SECONDS = float(env_str("DEEPREPO_JOB_SYNC_SECONDS", "2"))
# How often beat advances running sweeps (follow trials, prune, launch) and scans checkpoint rules.
DEEPREPO_SWEEP_SECONDS = float(env_str("DEEPREPO_SWEEP_SECONDS", "2"))
# Imports: a job still queued this long after its task was sent lost the message (the broker was
# away at upload, or restarted empty), and a running one whose heartbeat stopped this long ago lost
# its worker: beat sends either again.
DEEPREPO_IMPORT_STALE_SECONDS = float(env_str("DEEPREPO_IMPORT_STALE_SECONDS", "120"))
DEEPREPO_SEARCH_INDEX_SECONDS = float(env_str("DEEPREPO_SEARCH_INDEX_SECONDS", "5"))
# Windows of a search index backlog indexed side by side, each a Postgres backend busy with GIN upkeep
# (search/indexer.py): more than the database server's cores gains nothing.
DEEPREPO_SEARCH_INDEX_WORKERS = env_int("DEEPREPO_SEARCH_INDEX_WORKERS", 2)
# Deleting a run: up to this many rollouts it goes within the request (~0.1 s per 10^4 rollouts with their
# marks and search documents, bench/run_delete.py: 1.0 s for 10^5); a bigger run is deleted by the worker
# while the runs table says "deleting".
# A deletion asked for this long ago and not done lost its message or its worker: beat sends it again.
DEEPREPO_RUN_DELETE_INLINE_ROLLOUTS = env_int("DEEPREPO_RUN_DELETE_INLINE_ROLLOUTS", 10_000)
DEEPREPO_RUN_DELETE_STALE_SECONDS = float(env_str("DEEPREPO_RUN_DELETE_STALE_SECONDS", "900"))
# A report draft's page computes the panels its cache does not hold within this many ms; the rest
# load on their own (htmx), so the page never waits for a compare table's bootstraps over big runs.
DEEPREPO_REPORT_INLINE_MS = env_int("DEEPREPO_REPORT_INLINE_MS", 0)
CELERY_BEAT_SCHEDULE = {
    "sync-jobs": {
        "task": "deeprepo.jobs.sync",
        "schedule": DEEPREPO_JOB_SYNC_SECONDS,
        # A sync that could not start in time is superseded by the next one.
        "options": {"expires": max(1.0, DEEPREPO_JOB_SYNC_SECONDS * 2)},
    },
    "advance-sweeps": {"task": "deeprepo.sweeps.tick", "schedule": DEEPREPO_SWEEP_SECONDS,
                       "options": {"expires": max(1.0, DEEPREPO_SWEEP_SECONDS * 2)}},
    "scan-checkpoint-rules": {"task": "deeprepo.checkpoint_evals.scan", "schedule": DEEPREPO_SWEEP_SECONDS,
                              "options": {"expires": max(1.0, DEEPREPO_SWEEP_SECONDS * 2)}},
    "artifacts-cleanup": {"task": "deeprepo.artifacts_cleanup", "schedule": 15 * 60.0},
    # Looks a few times per window, so a lost import starts soon after it turns stale.
    "resend-imports": {"task": "deeprepo.imports.resend", "schedule": max(1.0, DEEPREPO_IMPORT_STALE_SECONDS / 4)},
    "resend-run-deletions": {"task": "deeprepo.runs.delete_resend", "schedule": 300.0, "options": {"expires": 240}},
    # New turns, calls and answers become searchable this many seconds after ingest, at most.
    "search-index": {"task": "deeprepo.search.index", "schedule": DEEPREPO_SEARCH_INDEX_SECONDS,
                     "options": {"expires": DEEPREPO_SEARCH_INDEX_SECONDS * 2}},
    # OTLP runs quiet for their project's period are finished (OTLP never says a run is over).
    "otlp-close-quiet-runs": {"task": "deeprepo.otlp.close_quiet_runs", "schedule": 60.0,
                              "options": {"expires": 120}},
    # Old rollout bodies and OTLP items (each project's retention setting), a bounded batch per beat.
    # MLflow spans whose trace info never came go to their experiment's traces run; idle traces runs finish.
    "mlflow-traces": {"task": "deeprepo.mlflow.traces_sweep", "schedule": 60.0, "options": {"expires": 120}},
    "retention": {"task": "deeprepo.retention.sweep", "schedule": float(env_int("DEEPREPO_RETENTION_SECONDS", 3600)),
                  "options": {"expires": 3000}},
}
# MLflow: spans still waiting for their trace info this long, and an experiment's traces run without a
# new trace this long, are settled by beat (mlflow_server/sweep.py).
DEEPREPO_MLFLOW_PENDING_SECONDS = float(env_str("DEEPREPO_MLFLOW_PENDING_SECONDS", "600"))
# OTLP spans and log records whose trace became a rollout are deleted after this many days.
DEEPREPO_OTLP_ITEM_DAYS = env_int("DEEPREPO_OTLP_ITEM_DAYS", 7)
# Each Celery worker records the queues it listens on this often; a queue whose workers were not
# heard from for three of these has none (its clusters' jobs show "waiting for a worker").
DEEPREPO_WORKER_HEARTBEAT_SECONDS = float(env_str("DEEPREPO_WORKER_HEARTBEAT_SECONDS", "5"))
# Dispatch retries of transient cluster errors: attempts in all, and the first backoff (doubles).
DEEPREPO_JOB_DISPATCH_ATTEMPTS = env_int("DEEPREPO_JOB_DISPATCH_ATTEMPTS", 5)
DEEPREPO_JOB_RETRY_SECONDS = float(env_str("DEEPREPO_JOB_RETRY_SECONDS", "2"))
# A pending / submitting / cancelling job untouched this long lost its task message (broker
# restarted without persistence, publish failed while it was away): beat's sync sends it again.
DEEPREPO_JOB_STALE_DISPATCH_SECONDS = float(env_str("DEEPREPO_JOB_STALE_DISPATCH_SECONDS", "120"))
# Cluster SSH keys and tokens are encrypted with this Fernet key (default: derived from SECRET_KEY).
DEEPREPO_ENCRYPTION_KEY = env_str("DEEPREPO_ENCRYPTION_KEY", "")
# URLs an editor gives (judge endpoint, MLflow pulls) may reach these non-public addresses: CIDRs
# or host names, comma-separated (e.g. "10.1.2.0/24,vllm.lab.internal"). Empty: public addresses only.
DEEPREPO_OUTBOUND_ALLOW = env_str("DEEPREPO_OUTBOUND_ALLOW", "")
# Requests per API key per window (deeprepo_web/ratelimit.py): writes and reads counted apart, 0 = no
# limit. Counted in Redis (this URL, else the cache's or the broker's Redis); without Redis, no limit.
DEEPREPO_RATE_WINDOW_SECONDS = env_int("DEEPREPO_RATE_WINDOW_SECONDS", 60)
DEEPREPO_RATE_INGEST_PER_WINDOW = env_int("DEEPREPO_RATE_INGEST_PER_WINDOW", 1200)
DEEPREPO_RATE_READ_PER_WINDOW = env_int("DEEPREPO_RATE_READ_PER_WINDOW", 1200)
DEEPREPO_RATE_REDIS_URL = env_str("DEEPREPO_RATE_REDIS_URL", "") or _redis_cache or (
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith("redis") else "")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# Imports: uploads below this size import inside the request; larger ones go to a Celery worker.
DEEPREPO_IMPORT_INLINE_BYTES = env_int("DEEPREPO_IMPORT_INLINE_BYTES", 5 * 1024 * 1024)
DEEPREPO_IMPORT_MAX_UPLOAD_BYTES = env_int("DEEPREPO_IMPORT_MAX_UPLOAD_BYTES", 4 * 1024**3)
# A zipped folder may expand to at most this many bytes / entries (zip bombs are refused).
DEEPREPO_IMPORT_MAX_UNZIPPED_BYTES = env_int("DEEPREPO_IMPORT_MAX_UNZIPPED_BYTES", 8 * 1024**3)
DEEPREPO_IMPORT_MAX_ZIP_ENTRIES = env_int("DEEPREPO_IMPORT_MAX_ZIP_ENTRIES", 200_000)
# Inputs of at least this many bytes are parsed in a child process, beside the database writes.
DEEPREPO_IMPORT_PARSE_PROCESS_BYTES = env_int("DEEPREPO_IMPORT_PARSE_PROCESS_BYTES", 8 * 1024 * 1024)
# Such inputs store rollout batches from this many threads, each on its own database connection
# (while one builds rows, the others' batches are in Postgres); 0 stores them one at a time.
DEEPREPO_IMPORT_WRITERS = env_int("DEEPREPO_IMPORT_WRITERS", 3)
