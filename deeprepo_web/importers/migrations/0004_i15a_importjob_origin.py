from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("importers", "0003_import_job_heartbeat"),
    ]

    operations = [
        migrations.AddField(
            model_name="importjob",
            name="origin",
            field=models.CharField(choices=[("upload", "upload"), ("api", "API"), ("cli", "command line"),
                                            ("job", "job outputs")], default="upload", max_length=8),
        ),
    ]
