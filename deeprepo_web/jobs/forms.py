"""Forms built from a template's parameter schema, and the cluster form. Validation of record
stays in services (the forms only give typed fields, bounds and all errors at once)."""

from __future__ import annotations

import json
import re
from typing import Any

from django import forms

from deeprepo_web.jobs.models import Cluster, JobTemplate
from deeprepo_web.jobs.params import validate_schema
from deeprepo_web.jobs.services.clusters import OUR_SETTINGS
from deeprepo_web.jobs.services.launch import RESOURCE_FIELDS
from workers.backends import backend_class

PARAM_PREFIX = "param_"
RES_PREFIX = "res_"
# The resources each kind of cluster reads when it submits (sbatch options; Ray's entrypoint
# resources; nothing for this machine): the launch form shows only the chosen cluster's.
RESOURCES_BY_KIND: dict[str, tuple[str, ...]] = {
    "local": ("gpus",),
    "slurm": ("partition", "nodes", "gpus", "cpus", "mem", "time_limit", "account"),
    "ray": ("cpus", "gpus", "ray_resources"),
}

SETTING_HELP = {
    "state_dir": "where job records, logs and exit codes are kept (relative paths: under $HOME)",
    "kill_grace_s": "seconds between SIGTERM and SIGKILL on cancel",
    "host": "SSH login node; leave empty to run sbatch on the worker's own machine",
    "port": "SSH port (22)",
    "user": "SSH user on the login node",
    "known_hosts": "the login node's host key lines (ssh-keyscan -p PORT HOST); required for SSH",
    "slurm_conf": "SLURM_CONF to export (leave empty for the default)",
    "bin_dir": "directory holding sbatch, squeue … when they are not on PATH",
    "command_timeout": "seconds before a Slurm command counts as hung (30)",
    "connect_timeout": "seconds to open the SSH connection (10)",
    "address": "Ray dashboard URL, e.g. http://head:8265",
    "timeout": "seconds per Ray API call (15)",
    "submit_timeout": "seconds for a submission (60)",
    "deeprepo_url": "how jobs reach this server (default: SITE_URL)",
    "workdir": "directory jobs start in",
    "output_root": "where job outputs go (eval results); one folder per job",
    "private_key": "OpenSSH private key (ed25519, ecdsa or rsa)",
    "passphrase": "passphrase of the private key, if any",
    "token": "bearer token for a proxy in front of the Ray head",
}


class SecretTextarea(forms.Textarea):
    """A textarea that never renders a value back, not even the one just posted."""

    def format_value(self, value: Any) -> None:
        return None


def _param_field(p: dict[str, Any]) -> forms.Field:
    common: dict[str, Any] = {"label": p["label"], "help_text": p.get("help", ""), "required": False}
    if "default" in p:
        common["initial"] = p["default"]
    kind = p["type"]
    if kind == "int":
        return forms.IntegerField(min_value=p.get("min"), max_value=p.get("max"), **common)
    if kind == "float":
        return forms.FloatField(min_value=p.get("min"), max_value=p.get("max"), **common)
    if kind == "bool":
        return forms.BooleanField(**common)
    if kind == "choice":
        return forms.ChoiceField(choices=[(c, c) for c in p["choices"]], **common)
    widget = forms.Textarea(attrs={"rows": 4}) if kind == "text" else forms.TextInput()
    return forms.CharField(max_length=p.get("max_length"), strip=False, widget=widget, **common)


class ClusterChoiceField(forms.ChoiceField):
    """One of the project's clusters (a launch or a sweep form); the cleaned value is its row."""

    def set_clusters(self, clusters: list[Cluster]) -> None:
        self.clusters = {str(c.pk): c for c in clusters}
        self.choices = [(pk, f"{c.name} ({c.kind})") for pk, c in self.clusters.items()]

    def clean(self, value: Any) -> Cluster:
        return self.clusters[super().clean(value)]


class LaunchForm(forms.Form):
    job_name = forms.CharField(label="run name", max_length=200, required=False,
                               help_text="default: the template name and the time")
    cluster = ClusterChoiceField(label="cluster")

    def __init__(self, *args: Any, template: JobTemplate, clusters: list[Cluster], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.template = template
        self.schema = validate_schema(template.params_schema)
        cluster_field: Any = self.fields["cluster"]
        cluster_field.set_clusters(clusters)
        self.cluster_kinds = {str(c.pk): c.kind for c in clusters}
        for p in self.schema:
            field = _param_field(p)
            if p["required"]:
                field.required = True
            self.fields[PARAM_PREFIX + p["name"]] = field
        self.fields[RES_PREFIX + "partition"] = forms.CharField(required=False, label="partition (Slurm)")
        self.fields[RES_PREFIX + "nodes"] = forms.IntegerField(required=False, min_value=1, max_value=1024,
                                                               label="nodes (Slurm)")
        self.fields[RES_PREFIX + "gpus"] = forms.IntegerField(
            required=False, min_value=0, max_value=64, label="GPUs per node",
            help_text="Slurm --gres=gpu:N, Ray num_gpus, this machine's CUDA_VISIBLE_DEVICES; checked against "
                      "what the cluster has before submitting")
        self.fields[RES_PREFIX + "cpus"] = forms.IntegerField(required=False, min_value=1, max_value=4096,
                                                              label="CPUs")
        self.fields[RES_PREFIX + "mem"] = forms.CharField(required=False, label="memory (Slurm)",
                                                          help_text="4096 (MB), 512M or 16G")
        self.fields[RES_PREFIX + "time_limit"] = forms.CharField(required=False, label="time limit (Slurm)",
                                                                 help_text="minutes, HH:MM:SS or D-HH:MM:SS")
        self.fields[RES_PREFIX + "account"] = forms.CharField(required=False, label="account (Slurm)")
        for name, value in (template.resources or {}).items():
            if RES_PREFIX + name in self.fields:
                self.fields[RES_PREFIX + name].initial = value  # the template's defaults
        self.fields[RES_PREFIX + "ray_resources"] = forms.CharField(
            required=False, label="Ray resources", help_text="name=amount, comma separated (accelerator_type:A100=1)")

    def param_fields(self) -> list[forms.BoundField]:
        return [self[PARAM_PREFIX + p["name"]] for p in self.schema]

    def resource_fields(self) -> list[forms.BoundField]:
        return [self[RES_PREFIX + name] for name in RESOURCE_FIELDS]

    def chosen_kind(self) -> str:
        """The kind of the cluster picked (posted, else the first offered)."""
        picked = self.data.get("cluster") if self.is_bound else None
        if picked not in self.cluster_kinds:
            picked = next(iter(self.cluster_kinds), None)
        return self.cluster_kinds.get(str(picked), "")

    def resource_rows(self) -> list[tuple[forms.BoundField, str, bool]]:
        """Each resource field, the cluster kinds that read it (for jobs.js), and whether it shows now."""
        kind = self.chosen_kind()
        return [(self[RES_PREFIX + name], " ".join(k for k, names in RESOURCES_BY_KIND.items() if name in names),
                 name in RESOURCES_BY_KIND.get(kind, RESOURCE_FIELDS)) for name in RESOURCE_FIELDS]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        # A field the chosen cluster does not read was hidden: its value (and any error in it) goes.
        cluster = cleaned.get("cluster")
        shown = RESOURCES_BY_KIND.get(cluster.kind if cluster else "", RESOURCE_FIELDS)
        for name in set(RESOURCE_FIELDS) - set(shown):
            cleaned.pop(RES_PREFIX + name, None)
            self.errors.pop(RES_PREFIX + name, None)
        return cleaned

    def clean_res_ray_resources(self) -> dict[str, float]:
        raw = str(self.cleaned_data.get("res_ray_resources") or "").strip()
        out: dict[str, float] = {}
        for item in filter(None, (s.strip() for s in raw.split(","))):
            m = re.fullmatch(r"([^=\s]+)\s*=\s*([0-9.]+)", item)
            if not m:
                raise forms.ValidationError(f"{item[:40]!r} is not name=amount")
            out[m.group(1)] = float(m.group(2))
        return out

    def params(self) -> dict[str, Any]:
        return {p["name"]: self.cleaned_data.get(PARAM_PREFIX + p["name"]) for p in self.schema}

    def resources(self) -> dict[str, Any]:
        return {name: self.cleaned_data.get(RES_PREFIX + name) for name in RESOURCE_FIELDS}


class ClusterForm(forms.Form):
    name = forms.CharField(max_length=100)
    queue = forms.CharField(
        max_length=100, required=False, label="worker queue",
        help_text="the Celery queue a worker beside this cluster listens on (celery -A workers.celery worker "
                  "-Q <queue>); empty: the default queue")

    def __init__(self, *args: Any, kind: str, cluster: Cluster | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.kind = kind
        stored = cluster.stored_secret_names() if cluster else []
        self.stored = stored
        for key in (*backend_class(kind).setting_fields, *OUR_SETTINGS):
            plain: forms.Widget = forms.Textarea(attrs={"rows": 3}) if key == "known_hosts" else forms.TextInput()
            self.fields[key] = forms.CharField(required=False, widget=plain, help_text=SETTING_HELP.get(key, ""),
                                               label=key.replace("_", " "))
        for key in backend_class(kind).secret_fields:
            widget: forms.Widget = (SecretTextarea(attrs={"rows": 4, "autocomplete": "off", "spellcheck": "false"})
                                    if key == "private_key" else forms.PasswordInput(render_value=False))
            label = key.replace("_", " ") + (" (stored; type to replace)" if key in stored else "")
            self.fields[key] = forms.CharField(required=False, widget=widget, label=label, strip=False,
                                               help_text=SETTING_HELP.get(key, ""))
        if cluster is not None and not self.is_bound:
            self.initial = {"name": cluster.name, "queue": cluster.queue,
                            **{k: self._show(v) for k, v in cluster.settings.items()}}

    @staticmethod
    def _show(value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value)

    def settings_in(self) -> dict[str, Any]:
        return {k: self.cleaned_data.get(k) for k in (*backend_class(self.kind).setting_fields, *OUR_SETTINGS)}

    def secrets_in(self) -> dict[str, str | None]:
        return {k: self.cleaned_data.get(k) or None for k in backend_class(self.kind).secret_fields}

    def secret_fields(self) -> list[forms.BoundField]:
        return [self[k] for k in backend_class(self.kind).secret_fields]

    def setting_fields(self) -> list[forms.BoundField]:
        return [self[k] for k in (*backend_class(self.kind).setting_fields, *OUR_SETTINGS)]


class TemplateForm(forms.Form):
    slug = forms.SlugField(max_length=64)
    name = forms.CharField(max_length=200)
    kind = forms.ChoiceField(choices=[("train", "train"), ("eval", "eval")])
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    command_template = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
                                       help_text="{name} placeholders become one shell-quoted word each; "
                                                 "{output_dir}, {job_id}, {run_id} are filled by the launcher")
    params_schema = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 10, "spellcheck": "false"}), initial="[]",
        help_text='JSON list: [{"name": "steps", "type": "int", "default": 10, "min": 1, "max": 100}, …]; '
                  "types int, float, str, text, choice (with choices), bool (optional flag)")
    import_outputs = forms.BooleanField(required=False, label="import the output folder into the run at the end")
    max_node_retries = forms.IntegerField(
        required=False, min_value=0, max_value=10, initial=0, label="max retries on node failure",
        help_text="a job its node killed (Slurm NODE_FAIL, BOOT_FAIL, PREEMPTED without requeue; a Ray node "
                  "died; a lost process) is submitted again into the same run, this many times at most; "
                  "a failure of the program itself (exit code ≠ 0) is never retried")
    res_partition = forms.CharField(required=False, label="default partition / queue (Slurm)")
    res_nodes = forms.IntegerField(required=False, min_value=1, max_value=1024, label="default nodes (Slurm)")
    res_gpus = forms.IntegerField(required=False, min_value=0, max_value=64, label="default GPUs per node")
    res_time_limit = forms.CharField(required=False, label="default time limit (Slurm)",
                                     help_text="minutes, HH:MM:SS or D-HH:MM:SS")

    def resources(self) -> dict[str, Any]:
        return {k: self.cleaned_data.get(RES_PREFIX + k) for k in ("partition", "nodes", "gpus", "time_limit")}

    def clean_params_schema(self) -> Any:
        raw = self.cleaned_data["params_schema"]
        try:
            return json.loads(raw)
        except json.JSONDecodeError as e:
            raise forms.ValidationError(f"not JSON: {e.msg} at line {e.lineno} column {e.colno}") from e
