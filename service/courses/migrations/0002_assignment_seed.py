"""Each assignment gets a seed of its own. Existing assignments keep the seed their rubric gave
them until now, so their stored scores stay what a regrade would give."""

import secrets
from typing import Any

from django.db import migrations, models

import service.courses.models


def short_seed() -> int:
    """The seeds this column held when it was made: 31 bits (0006 replaces them with keys)."""
    return secrets.randbelow(2**31)


def keep_rubric_seeds(apps: Any, schema_editor: Any) -> None:
    from grader.errors import GraderError
    from grader.rubric import load_rubric

    Assignment = apps.get_model("courses", "Assignment")
    for assignment in Assignment.objects.all():
        try:
            seed = load_rubric(service.courses.models.RUBRICS / assignment.rubric_file).seed
        except (GraderError, OSError):
            seed = short_seed()  # no rubric to agree with: a fresh secret
        if not 0 <= seed < 2**63:
            seed = short_seed()  # a key that only fits 0006's column: 0006 gives a fresh one
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
                default=short_seed,
                help_text="hidden inputs are drawn from this seed (drawn at random when the assignment is made; "
                "never shown to students); after a change, regrade everyone",
            ),
        ),
    ]
