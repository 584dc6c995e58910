"""When a submission's current job was queued; existing pending rows count from their upload."""

from django.db import migrations, models


def from_received(apps, schema_editor):  # type: ignore[no-untyped-def]
    Submission = apps.get_model("submissions", "Submission")
    Submission.objects.filter(queued_at__isnull=True, state__in=("queued", "running")).update(
        queued_at=models.F("received_at")
    )


class Migration(migrations.Migration):

    dependencies = [
        ('submissions', '0004_seed_key'),
    ]

    operations = [
        migrations.AddField(
            model_name='submission',
            name='queued_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(from_received, migrations.RunPython.noop),
    ]
