"""Seeds become keys of 128 bits, kept as text. An assignment whose seed is short (every seed
drawn until now: 31 bits, searchable from the hidden inputs one grading shows) gets a fresh key;
its submissions keep their stored scores until the staff regrade them."""

from typing import Any

import service.courses.keys
import service.courses.models
from django.db import migrations


def fresh_keys(apps: Any) -> None:
    from grader.rubric import STRONG_SEED

    Assignment = apps.get_model("courses", "Assignment")
    for assignment in Assignment.objects.all():
        if int(assignment.seed) < STRONG_SEED:
            Assignment.objects.filter(pk=assignment.pk).update(seed=str(service.courses.models.draw_seed()))


class Migration(migrations.Migration):

    dependencies = [
        ('courses', '0005_assignment_similarity'),
    ]

    operations = [
        migrations.AlterField(
            model_name='assignment',
            name='seed',
            field=service.courses.keys.KeyField(default=service.courses.models.draw_seed, help_text='hidden inputs are drawn from this seed (drawn at random when the assignment is made; never shown to students); after a change, regrade everyone', max_length=78),
        ),
        migrations.RunPython(lambda apps, editor: fresh_keys(apps), migrations.RunPython.noop),
    ]
