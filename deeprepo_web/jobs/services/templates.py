"""Job templates: the built-in ones, and a project's own (validated before they are saved)."""

from __future__ import annotations

from typing import Any

from django.core.validators import slug_re
from django.db import IntegrityError, transaction
from django.db.models import Q

from deeprepo_web.accounts.models import Project
from deeprepo_web.jobs.builtin import BUILTIN_TEMPLATES
from deeprepo_web.jobs.models import JobTemplate
from deeprepo_web.jobs.params import ParamError, validate_template
from deeprepo_web.jobs.services.errors import JobInputError
from deeprepo_web.jobs.services.launch import resources_validate
from deeprepo_web.text import clean_deep, clean_text

# The resources a template sets defaults for (the launch form starts from them).
TEMPLATE_RESOURCES = ("partition", "nodes", "gpus", "time_limit")
# A node that keeps failing is the cluster's problem to fix, not ours to hammer.
MAX_NODE_RETRIES = 10


def builtin_templates_ensure() -> None:
    """Create or refresh the built-in templates (cheap when they are current). Run after every
    `migrate` (`jobs.signals`), so an upgrade brings new and changed built-ins."""
    existing = {t.slug: t for t in JobTemplate.objects.filter(project__isnull=True, builtin=True)}
    for spec in BUILTIN_TEMPLATES:
        fields = {
            "name": spec["name"], "kind": spec["kind"], "description": spec["description"],
            "command_template": spec["command_template"],
            "params_schema": validate_template(spec["command_template"], spec["params_schema"]),
            "import_outputs": spec.get("import_outputs", False),
        }
        current = existing.get(spec["slug"])
        if current is None:
            try:
                with transaction.atomic():
                    JobTemplate.objects.create(project=None, slug=spec["slug"], builtin=True, **fields)
            except IntegrityError:  # a concurrent migrate made it (the unique built-in slug)
                pass
        elif any(getattr(current, k) != v for k, v in fields.items()):
            JobTemplate.objects.filter(pk=current.pk).update(**fields)


def templates_for_project(project: Project) -> list[JobTemplate]:
    order = {spec["slug"]: i for i, spec in enumerate(BUILTIN_TEMPLATES)}
    templates = JobTemplate.objects.filter(Q(project=project) | Q(project__isnull=True))
    # Built-ins in their curated order (the demo first), then the project's own by name.
    return sorted(templates, key=lambda t: (0, order.get(t.slug, 99), "") if t.builtin else (1, 0, t.name.lower()))


def template_save(
    *, project: Project, slug: str, name: str, kind: str, command_template: str, params_schema: Any,
    description: str = "", import_outputs: bool = False, template: JobTemplate | None = None,
    resources: dict[str, Any] | None = None, max_node_retries: int = 0,
) -> JobTemplate:
    """Validate and save a project template; a placeholder without a parameter is refused."""
    if not slug_re.match(slug) or len(slug) > JobTemplate._meta.get_field("slug").max_length:  # type: ignore[operator]
        raise JobInputError("slug", "letters, digits, - and _ only (at most 64)")  # it goes into URLs
    name, description, command_template = clean_text(name), clean_text(description), clean_text(command_template)
    try:
        # Cleaned after validation, which refuses NUL in defaults and NaN with a message; what is
        # left to clean is text (labels, help, choices) holding NUL or lone surrogates.
        schema = clean_deep(validate_template(command_template, params_schema))
    except ParamError as e:
        raise JobInputError(e.field, e.message) from e
    res = resources_validate({k: v for k, v in (resources or {}).items() if k in TEMPLATE_RESOURCES})
    if not isinstance(max_node_retries, int) or isinstance(max_node_retries, bool) or \
            not 0 <= max_node_retries <= MAX_NODE_RETRIES:
        raise JobInputError("max_node_retries", f"must be an integer 0..{MAX_NODE_RETRIES}, got {max_node_retries!r}")
    if kind not in ("train", "eval"):
        raise JobInputError("kind", f"{kind!r} is not train or eval")
    if template is not None and (template.builtin or template.project_id != project.id):
        raise JobInputError("template", "built-in templates cannot be edited; save a copy under a new slug")
    clash = JobTemplate.objects.filter(Q(project=project) | Q(project__isnull=True), slug=slug)
    if template is not None:
        clash = clash.exclude(pk=template.pk)
    if clash.exists():
        raise JobInputError("slug", f"a template {slug!r} already exists")
    fields = {"slug": slug, "name": name, "kind": kind, "command_template": command_template,
              "params_schema": schema, "description": description, "import_outputs": import_outputs,
              "resources": res, "max_node_retries": max_node_retries}
    if template is None:
        return JobTemplate.objects.create(project=project, **fields)
    for k, v in fields.items():
        setattr(template, k, v)
    template.save()
    return template
