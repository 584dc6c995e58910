"""A submission may end as not_loadable: a file that does not load has a state of its own."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('submissions', '0007_audit_assignment_student'),
    ]

    operations = [
        migrations.AlterField(
            model_name='submission',
            name='state',
            field=models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('graded', 'Graded'), ('not_loadable', 'Not Loadable'), ('timeout', 'Timeout'), ('oom', 'Oom'), ('output_limit', 'Output Limit'), ('ungradable', 'Ungradable'), ('infra_error', 'Infra Error'), ('superseded', 'Superseded')], db_index=True, default='queued', max_length=16),
        ),
    ]
