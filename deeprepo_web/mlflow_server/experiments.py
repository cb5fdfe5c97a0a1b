"""Experiments: MLflow's name → id, kept per project. Experiment "0" is each project's Default."""

from __future__ import annotations

import re
from typing import Any

from django.db import IntegrityError, transaction

from deeprepo_web.accounts.models import Project
from deeprepo_web.mlflow_server.errors import MlflowError, invalid, missing
from deeprepo_web.mlflow_server.models import Experiment

DEFAULT_ID = "0"
DEFAULT_NAME = "Default"
MAX_NAME = 500


def experiment_json(exp: Experiment) -> dict[str, Any]:
    exp_id = wire_id(exp)
    return {
        "experiment_id": exp_id,
        "name": exp.name,
        "artifact_location": f"mlflow-artifacts:/{exp_id}",
        "lifecycle_stage": "deleted" if exp.deleted else "active",
        "creation_time": int(exp.created_at.timestamp() * 1000),
        "last_update_time": int(exp.updated_at.timestamp() * 1000),
        "tags": [{"key": k, "value": v} for k, v in sorted(exp.tags.items())],
    }


def wire_id(exp: Experiment) -> str:
    return DEFAULT_ID if exp.name == DEFAULT_NAME else str(exp.pk)


def experiment_default(project: Project) -> Experiment:
    exp, _ = Experiment.objects.get_or_create(project=project, name=DEFAULT_NAME)
    return exp


def experiment_get(project: Project, experiment_id: Any) -> Experiment:
    text = str(experiment_id or "").strip()
    if text == DEFAULT_ID:
        return experiment_default(project)
    exp = Experiment.objects.filter(project=project, pk=int(text)).first() if text.isdigit() else None
    if exp is None:
        raise missing(f"No Experiment with id={text!r} exists")
    return exp


def experiment_by_name(project: Project, name: str) -> Experiment:
    if name == DEFAULT_NAME:
        return experiment_default(project)
    exp = Experiment.objects.filter(project=project, name=name).first()
    if exp is None:
        raise missing(f"Could not find experiment with name '{name}'")
    return exp


def experiment_create(*, project: Project, name: Any, tags: dict[str, str]) -> Experiment:
    if not isinstance(name, str) or not name.strip():
        raise invalid("Invalid experiment name: 'name' must be a non-empty string")
    if len(name) > MAX_NAME:
        raise invalid(f"Invalid experiment name: {len(name)} characters is over the limit of {MAX_NAME}")
    try:
        with transaction.atomic():
            return Experiment.objects.create(project=project, name=name, tags=tags)
    except IntegrityError as exc:
        raise MlflowError("RESOURCE_ALREADY_EXISTS", f"Experiment '{name}' already exists.") from exc


_NAME_FILTER = re.compile(r"^\s*(?:attributes\.)?name\s+(=|!=|like|ilike)\s*'((?:[^']|'')*)'\s*$", re.IGNORECASE)


def experiment_search(project: Project, *, where: str, offset: int, limit: int,
                      deleted: bool | None) -> list[Experiment]:
    experiment_default(project)
    found = Experiment.objects.filter(project=project).order_by("-created_at", "-pk")
    if where.strip():
        match = _NAME_FILTER.match(where)
        if match is None:
            raise invalid(f"Unsupported filter {where.strip()!r}: this server reads `name = '<name>'`, "
                          "`name != '<name>'` and `name LIKE '<pattern with %>'` for experiments")
        op, value = match.group(1).lower(), match.group(2).replace("''", "'")
        if op in ("like", "ilike"):
            pattern = "^" + ".*".join(re.escape(part) for part in value.split("%")) + "$"
            found = found.filter(**{"name__iregex" if op == "ilike" else "name__regex": pattern})
        else:
            found = found.exclude(name=value) if op == "!=" else found.filter(name=value)
    if deleted is not None:
        found = found.filter(deleted=deleted)
    return list(found[offset:offset + limit])


def experiment_set(*, exp: Experiment, deleted: bool | None = None, name: str | None = None,
                   tag: tuple[str, str] | None = None) -> None:
    if deleted is not None:
        exp.deleted = deleted
    if name:
        exp.name = name
    if tag:
        exp.tags[tag[0]] = tag[1]
    try:
        with transaction.atomic():
            exp.save()
    except IntegrityError as exc:
        raise MlflowError("RESOURCE_ALREADY_EXISTS", f"Experiment '{name}' already exists.") from exc
