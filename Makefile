# Two commands matter: `make run` and `make test` (see README.md).
SHELL := /bin/bash
export UV_PYTHON_DOWNLOADS := never
UV ?= uv
# Tests and checks talk to the machine's Postgres unless DATABASE_URL says otherwise.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres

.PHONY: run test test-fast lint typecheck pytest bench bench-pages bench-jobs sync sync-run ml vendor

# Everything, the test toolchain (the dev group) included. --inexact keeps what `make ml` installed
# beside the lock (torch, accelerate).
sync:
	@command -v $(UV) >/dev/null || pip install uv
	$(UV) sync --frozen --inexact --group dev

# Only what the server, worker and client need; quiet, so the first screen is the app's.
sync-run:
	@command -v $(UV) >/dev/null || pip install uv
	@echo "[deeprepo] installing the server's packages into .venv (the first time takes a minute)"
	@$(UV) sync --frozen --inexact --quiet

# torch (a CPU build) and accelerate, for the TRL callback test; CI runs it.
ml: sync
	scripts/install-ml.sh

run: sync-run
	@$(UV) run --no-sync python -m deeprepo_web.launcher

# lint-imports: the layer contracts in pyproject.toml ([tool.importlinter]; docs/architecture.md, "Layers").
lint: sync
	$(UV) run ruff check .
	$(UV) run lint-imports

typecheck: sync
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} $(UV) run mypy deeprepo_web workers client/deeprepo_client

pytest: sync
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} DEEPREPO_CONN_MAX_AGE=0 $(UV) run pytest $(PYTEST_ARGS)

test: lint typecheck pytest

# The edit-test loop: no Chromium, no fault injection, no cluster (markers given in tests/conftest.py).
# CI runs `make test`, everything.
test-fast: sync
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} DEEPREPO_CONN_MAX_AGE=0 $(UV) run pytest \
		-m "not browser and not fault and not cluster" $(PYTEST_ARGS)

bench: sync
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} $(UV) run python bench/ingest.py

bench-pages: sync
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} $(UV) run python bench/pages.py $(BENCH_ARGS)

bench-jobs: sync
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} $(UV) run python bench/jobs.py

vendor:
	scripts/vendor.sh
