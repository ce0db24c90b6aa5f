"""AUDIT (`audit_agent`), and permission names that carry the API's words (READ, EDIT, …).

Django creates missing permissions after migrating but never renames existing ones, so the
names are written here, and AUDIT is created here too, for the grants of the next step.
"""

from django.db import migrations

from agents.models import AGENT_PERMISSIONS, AGENT_SCOPE_PERMISSIONS


def name_permissions(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    for model, permissions in (("agent", AGENT_PERMISSIONS), ("environment", AGENT_SCOPE_PERMISSIONS)):
        content_type, _ = ContentType.objects.get_or_create(app_label="agents", model=model)
        for codename, name in permissions:
            Permission.objects.update_or_create(
                content_type=content_type, codename=codename, defaults={"name": str(name)}
            )


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0007_model_attachment_capabilities'),
        ('auth', '0012_alter_user_first_name_max_length'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='agent',
            options={'default_permissions': (), 'ordering': ['name'], 'permissions': [('view_agent', 'READ: Can view agent'), ('add_agent', 'CREATE: Can add agent'), ('change_agent', 'EDIT: Can change agent'), ('invoke_agent', 'INVOKE: Can invoke agent'), ('delete_agent', 'DELETE: Can delete agent'), ('audit_agent', "AUDIT: Can read every caller's runs of agent")]},
        ),
        migrations.AlterModelOptions(
            name='environment',
            options={'ordering': ['name'], 'permissions': [('view_agent', 'READ agents in this environment'), ('add_agent', 'CREATE agents in this environment'), ('change_agent', 'EDIT agents in this environment'), ('invoke_agent', 'INVOKE agents in this environment'), ('delete_agent', 'DELETE agents in this environment'), ('audit_agent', "AUDIT: read every caller's runs of agents in this environment")]},
        ),
        migrations.RunPython(name_permissions, migrations.RunPython.noop),
    ]
