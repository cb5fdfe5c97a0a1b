"""The sweep form: the sweep's settings, and one line per template parameter (a value, a list or a range)."""

from __future__ import annotations

from typing import Any

from django import forms

from deeprepo_web.jobs.forms import ClusterChoiceField
from deeprepo_web.jobs.models import Cluster, JobTemplate
from deeprepo_web.jobs.params import validate_schema
from deeprepo_web.sweeps.models import Direction, Method, Pruner
from deeprepo_web.sweeps.space import MAX_TRIALS

SPACE_PREFIX = "space_"


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


class SweepForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, label="Sweep name",
                           help_text="default: the template's name and the date")
    cluster = ClusterChoiceField(label="Cluster")
    method = forms.ChoiceField(choices=Method.choices, initial=Method.TPE)
    metric = forms.CharField(max_length=500, initial="reward",
                             help_text="a metric key the program logs; its last value is the trial's result")
    direction = forms.ChoiceField(choices=Direction.choices, initial=Direction.MAXIMIZE)
    max_trials = forms.IntegerField(min_value=1, max_value=MAX_TRIALS, initial=12, label="Max trials")
    max_parallel = forms.IntegerField(min_value=1, max_value=MAX_TRIALS, initial=3, label="Max in parallel")
    pruner = forms.ChoiceField(choices=Pruner.choices, initial=Pruner.MEDIAN,
                               help_text="stops trials doing worse than the others at the same step")
    warmup_steps = forms.IntegerField(min_value=0, initial=5, label="Warm-up steps",
                                      help_text="median: no pruning before this step; halving: the first rung")
    startup_trials = forms.IntegerField(min_value=0, initial=2, label="Startup trials",
                                        help_text="median: trials that complete before any is pruned")
    seed = forms.IntegerField(min_value=0, max_value=2**31 - 1, initial=0, required=False)

    def __init__(self, *args: Any, template: JobTemplate, clusters: list[Cluster], **kw: Any) -> None:
        super().__init__(*args, **kw)
        cluster = self.fields["cluster"]
        assert isinstance(cluster, ClusterChoiceField)
        cluster.set_clusters(clusters)
        self.schema = validate_schema(template.params_schema)
        for p in self.schema:
            self.fields[SPACE_PREFIX + p["name"]] = forms.CharField(
                label=p["label"], required=False, initial=_shown(p.get("default")), max_length=20_000,
                help_text=p.get("help", ""),
                widget=forms.Textarea(attrs={"rows": 2}) if p["type"] == "text" else forms.TextInput(),
            )

    def space_fields(self) -> list[forms.BoundField]:
        return [self[SPACE_PREFIX + p["name"]] for p in self.schema]

    def specs(self) -> dict[str, str]:
        return {p["name"]: self.cleaned_data.get(SPACE_PREFIX + p["name"]) or "" for p in self.schema}
