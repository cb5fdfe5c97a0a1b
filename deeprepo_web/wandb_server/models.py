"""What the W&B file stream leaves beside a run's metrics: how far each writer's files were read,
the console lines, and the alerts a training script raised.

The SDK re-sends a chunk it got no answer for, and in shared mode several processes (each with its
own X-WANDB-ASYNC-CLIENT-ID and its own offsets) write one run: keeping the next offset per (run,
writer, file) is what stores a re-sent line once.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from deeprepo_web.runs.models import Run


class StreamOffset(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    writer = models.CharField(max_length=128, blank=True, default="")
    file = models.CharField(max_length=64)
    next_offset = models.BigIntegerField(default=0)  # lines before this one are stored
    tail = models.TextField(blank=True, default="")  # the last line (history: a resumed run's next step)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "writer", "file"], name="wandb_offset_unique")]


class ConsoleLine(models.Model):
    """One line of output.log; a progress bar rewrites its line in place (same offset, new text)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+", db_index=False)
    writer = models.CharField(max_length=128, blank=True, default="")
    offset = models.BigIntegerField()
    stream = models.CharField(max_length=8, default="stdout")  # stdout | stderr
    time = models.CharField(max_length=40, blank=True, default="")  # as the SDK wrote it
    text = models.TextField(blank=True, default="")
    received_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "writer", "offset"], name="wandb_console_unique")]


class RunAlert(models.Model):
    """wandb.alert(): shown on the run's Logs tab."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    title = models.CharField(max_length=500)
    text = models.TextField(blank=True, default="")
    severity = models.CharField(max_length=8, default="INFO")
    created_at = models.DateTimeField(default=timezone.now)
