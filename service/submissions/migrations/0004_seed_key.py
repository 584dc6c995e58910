"""A submission records the key it was graded with: text, since a key does not fit 64 bits."""

import service.courses.keys
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('submissions', '0003_job_identity'),
    ]

    operations = [
        migrations.AlterField(
            model_name='submission',
            name='seed',
            field=service.courses.keys.KeyField(blank=True, max_length=78, null=True),
        ),
    ]
