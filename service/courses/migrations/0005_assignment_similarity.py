from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("courses", "0004_enrolment_lms_user_id"),
    ]

    operations = [
        migrations.AddField(
            model_name="assignment",
            name="base_code",
            field=models.TextField(
                blank=True, help_text="starter code every student was given: not counted by the similarity report"
            ),
        ),
        migrations.AddField(
            model_name="assignment",
            name="similarity_json",
            field=models.TextField(blank=True, help_text="the last similarity report's headline"),
        ),
    ]
