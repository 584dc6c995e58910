"""Audit entries name the assignment and the student they concern; entries about a submission
take both from it."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def from_submission(apps, schema_editor):  # type: ignore[no-untyped-def]
    AuditEntry = apps.get_model("submissions", "AuditEntry")
    for entry in AuditEntry.objects.filter(submission__isnull=False).select_related("submission").iterator():
        entry.assignment_id = entry.submission.assignment_id
        entry.student_id = entry.submission.user_id
        entry.save(update_fields=["assignment", "student"])


class Migration(migrations.Migration):

    dependencies = [
        ('courses', '0007_enrolment_left_the_course'),
        ('submissions', '0006_review_requests'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='auditentry',
            name='assignment',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='audit', to='courses.assignment'),
        ),
        migrations.AddField(
            model_name='auditentry',
            name='student',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddIndex(
            model_name='auditentry',
            index=models.Index(fields=['assignment', '-at'], name='audit_by_assignment'),
        ),
        migrations.RunPython(from_submission, migrations.RunPython.noop),
    ]
