"""The labels page's form and the trajectory page's "Add label" form. They give typed fields and
every error at once; what makes a label or a mark valid stays in `labels.services`."""

from __future__ import annotations

from django import forms


class LabelForm(forms.Form):
    name = forms.CharField(required=False)
    colour = forms.CharField(required=False, empty_value="#6b7280")
    description = forms.CharField(required=False)


class MarkForm(forms.Form):
    label = forms.CharField(error_messages={"required": "pick one of the project's labels"})
    turn = forms.IntegerField(required=False, min_value=0, error_messages={
        "invalid": "a turn number is a whole number (or leave it empty for the whole rollout)",
        "min_value": "a turn number is 0 or more"})
    note = forms.CharField(required=False, strip=False)


class MarkReviewForm(forms.Form):
    """A person's word on a judge's proposed mark: the buttons post confirm=1 or confirm=0."""

    confirm = forms.TypedChoiceField(choices=[("1", "confirm"), ("0", "reject")], coerce=lambda v: v == "1",
                                     error_messages={"required": "say confirm (1) or reject (0)",
                                                     "invalid_choice": "say confirm (1) or reject (0)"})
    next = forms.CharField(required=False)  # the page to go back to: a judge job's, or the trajectory
