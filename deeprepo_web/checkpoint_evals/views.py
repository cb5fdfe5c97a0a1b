"""A training run's checkpoint-eval rules: the list, what they launched, and the form to add one."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import Role
from deeprepo_web.checkpoint_evals.errors import RuleInputError
from deeprepo_web.checkpoint_evals.forms import RuleForm
from deeprepo_web.checkpoint_evals.models import CheckpointEval, CheckpointRule
from deeprepo_web.checkpoint_evals.services import rule_create
from deeprepo_web.front.http import form_page
from deeprepo_web.jobs.models import Cluster, TemplateKind
from deeprepo_web.jobs.services.templates import templates_for_project
from deeprepo_web.runs.models import Run


@login_required
def rules(request: HttpRequest, slug: str, run_id: str) -> HttpResponse:
    write = request.method == "POST"
    project, membership = access.project_for_user(request.user, slug, role=Role.EDITOR if write else Role.VIEWER)
    run = get_object_or_404(Run, project=project, public_id=run_id)
    templates = [t for t in templates_for_project(project) if t.kind == TemplateKind.EVAL]
    clusters = list(Cluster.objects.filter(project=project))
    form = RuleForm(request.POST or None, templates=templates, clusters=clusters,
                    initial={"template": next((str(t.pk) for t in templates if t.slug == "demo-grpo-eval"), None)})

    def save(data: dict[str, Any]) -> CheckpointRule:
        return rule_create(run=run, template=next(t for t in templates if str(t.pk) == data["template"]),
                           cluster=next(c for c in clusters if str(c.pk) == data["cluster"]),
                           trigger=data["trigger"], every_steps=data["every_steps"], path_param=data["path_param"],
                           step_param=data["step_param"], path_template=data["path_template"],
                           max_at_once=data["max_at_once"], user=request.user)

    # The lists stay querysets: read only when the page is drawn, not before a saved rule's redirect.
    context = {
        "project": project, "run": run, "can_write": membership.allows(Role.EDITOR),
        "rules": CheckpointRule.objects.filter(run=run).select_related("template", "cluster"),
        "evals": CheckpointEval.objects.filter(rule__run=run).select_related("job", "job__run")[:500],
    }
    return form_page(request, form, save,
                     done=lambda _: redirect("checkpoint_rules", slug=project.slug, run_id=run.public_id),
                     template="checkpoint_evals/rules.html", errors=RuleInputError, context=context)
