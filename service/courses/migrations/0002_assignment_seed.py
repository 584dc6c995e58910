"""Each assignment gets a seed of its own. Existing assignments keep the seed their rubric gave
them until now, so their stored scores stay what a regrade would give."""

from typing import Any

from django.db import migrations, models

import service.courses.models


def keep_rubric_seeds(apps: Any, schema_editor: Any) -> None:
    from grader.errors import GraderError
    from grader.rubric import load_rubric

    Assignment = apps.get_model("courses", "Assignment")
    for assignment in Assignment.objects.all():
        try:
            seed = load_rubric(service.courses.models.RUBRICS / assignment.rubric_file).seed
        except (GraderError, OSError):
            seed = service.courses.models.draw_seed()  # no rubric to agree with: a fresh secret
        Assignment.objects.filter(pk=assignment.pk).update(seed=seed)


class Migration(migrations.Migration):
    dependencies = [("courses", "0001_initial")]

    operations = [
        migrations.AddField(model_name="assignment", name="seed", field=models.BigIntegerField(null=True)),
        migrations.RunPython(keep_rubric_seeds, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="assignment",
            name="seed",
            field=models.BigIntegerField(
                default=service.courses.models.draw_seed,
                help_text="hidden inputs are drawn from this seed (drawn at random when the assignment is made; "
                "never shown to students); after a change, regrade everyone",
            ),
        ),
    ]
