"""API tokens move to Accounts: Watches forgets the model; the table and its rows stay (Accounts
keeps the table's name). Its content type moves with it, so permissions given on it still hold."""
from django.db import migrations


def move_content_type(apps, schema_editor, source="watches", target="accounts"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label=target, model="apitoken").exists():
        ContentType.objects.filter(app_label=source, model="apitoken").update(app_label=target)


def move_content_type_back(apps, schema_editor):
    move_content_type(apps, schema_editor, source="accounts", target="watches")


class Migration(migrations.Migration):

    dependencies = [
        ("watches", "0001_initial"),
        ("accounts", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ApiToken")],
            database_operations=[],
        ),
        migrations.RunPython(move_content_type, move_content_type_back),
    ]
