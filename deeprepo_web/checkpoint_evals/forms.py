"""The rule form: which eval template on which cluster, when, and which parameters get the path and step."""

from __future__ import annotations

from typing import Any

from django import forms

from deeprepo_web.checkpoint_evals.models import Trigger
from deeprepo_web.checkpoint_evals.services import MAX_AT_ONCE
from deeprepo_web.jobs.models import Cluster, JobTemplate


class RuleForm(forms.Form):
    template = forms.ChoiceField(label="Eval template")
    cluster = forms.ChoiceField(label="Cluster")
    trigger = forms.ChoiceField(choices=Trigger.choices, initial=Trigger.ARTIFACT, label="When")
    every_steps = forms.IntegerField(min_value=1, required=False, label="Every N steps",
                                     help_text="for “every N steps”")
    path_param = forms.CharField(max_length=64, initial="checkpoint", label="Path parameter",
                                 help_text="the template parameter that gets the checkpoint's path")
    step_param = forms.CharField(max_length=64, required=False, initial="step", label="Step parameter",
                                 help_text="optional: the parameter that gets the checkpoint's step")
    path_template = forms.CharField(max_length=1000, initial="{output_dir}/{artifact}", label="Path",
                                    help_text="{output_dir} (the training job's), {artifact}, {step}, {run_id}")
    max_at_once = forms.IntegerField(min_value=1, max_value=MAX_AT_ONCE, initial=10, label="At most at once")

    def __init__(self, *args: Any, templates: list[JobTemplate], clusters: list[Cluster], **kw: Any) -> None:
        super().__init__(*args, **kw)
        for name, choices in (("template", [(str(t.pk), t.name) for t in templates]),
                              ("cluster", [(str(c.pk), f"{c.name} ({c.kind})") for c in clusters])):
            field = self.fields[name]
            assert isinstance(field, forms.ChoiceField)
            field.choices = choices
