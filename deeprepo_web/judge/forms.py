"""The judge endpoint's form (the judge page) and the form that starts a judge job (under a search's
results). Typed fields, every error at once; what makes an endpoint or a job valid stays in
`judge.services`."""

from __future__ import annotations

from django import forms

PRICE_ERRORS = {"invalid": "a price is a number ≥ 0", "min_value": "a price is a number ≥ 0"}


class EndpointForm(forms.Form):
    base_url = forms.CharField(required=False)
    model = forms.CharField(required=False)
    api_key = forms.CharField(required=False, strip=False)  # "" keeps the stored key unless clear_key
    clear_key = forms.BooleanField(required=False)
    input_per_mtok = forms.FloatField(required=False, min_value=0, error_messages=PRICE_ERRORS)
    output_per_mtok = forms.FloatField(required=False, min_value=0, error_messages=PRICE_ERRORS)

    def new_key(self) -> str | None:
        """The key to store: None keeps the stored one, "" removes it."""
        key = self.cleaned_data["api_key"]
        return None if key == "" and not self.cleaned_data["clear_key"] else key


class JudgeStartForm(forms.Form):
    rubric = forms.CharField(required=False)
    label_name = forms.CharField(label="label", error_messages={"required": "pick the label a “yes” proposes"})
    limit = forms.IntegerField(required=False, error_messages={"invalid": "a whole number of rollouts"})
