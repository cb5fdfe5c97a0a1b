# deeprepo-web as a container image: the wheel `uv build` makes (templates, static files and
# migrations inside), installed into a slim Python. One image for web, worker and beat (the compose
# file in deploy/compose/ picks the command). Not built on the machines this project is tested on
# (no container builder there): see docs/deploy.md.
FROM python:3.11-slim-trixie AS build
RUN pip install --no-cache-dir uv
WORKDIR /src
COPY pyproject.toml uv.lock README.md .env.example ./
COPY client ./client
COPY deeprepo_web ./deeprepo_web
COPY workers ./workers
COPY templates ./templates
RUN uv build --wheel --out-dir /dist && uv build --wheel --package deeprepo-client --out-dir /dist

FROM python:3.11-slim-trixie
# pg_dump / pg_restore for `deeprepo-web manage backup|restore` (Debian 13: PostgreSQL 17 tools,
# which read servers up to 17); openssh-client and git for jobs the worker submits over SSH.
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-client openssh-client git \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /dist /tmp/dist
RUN pip install --no-cache-dir /tmp/dist/*.whl && rm -rf /tmp/dist
RUN useradd --create-home --uid 10001 deeprepo && mkdir -p /var/lib/deeprepo && chown deeprepo /var/lib/deeprepo
USER deeprepo
WORKDIR /home/deeprepo
ENV DEEPREPO_DATA_DIR=/var/lib/deeprepo PYTHONUNBUFFERED=1
EXPOSE 8000
CMD ["gunicorn", "deeprepo_web.wsgi", "--bind", "0.0.0.0:8000", "--workers", "4", "--threads", "1", \
     "--timeout", "120", "--access-logfile", "-"]
