"""Version aliases (docs/api.md#aliases) and their history, which the database keeps append-only."""

import django.db.models.deletion
import django.db.models.functions.text
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


# A change is never rewritten. The one update allowed is Django's SET_NULL of `changed_by`
# when that user is deleted; deleting rows stays possible, with their agent.
APPEND_ONLY_SQL = """
CREATE FUNCTION agents_alias_change_append_only() RETURNS trigger AS $$
BEGIN
    IF NEW.changed_by_id IS NULL
        AND (NEW.id, NEW.agent_id, NEW.name, NEW.from_version_id, NEW.to_version_id,
             NEW.changed_at)
            IS NOT DISTINCT FROM
            (OLD.id, OLD.agent_id, OLD.name, OLD.from_version_id, OLD.to_version_id,
             OLD.changed_at)
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the history of aliases is append-only'
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER agents_alias_change_no_update
    BEFORE UPDATE ON agents_aliaschange
    FOR EACH ROW EXECUTE FUNCTION agents_alias_change_append_only();
"""

DROP_SQL = """
DROP TRIGGER IF EXISTS agents_alias_change_no_update ON agents_aliaschange;
DROP FUNCTION IF EXISTS agents_alias_change_append_only();
"""


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0010_run_steps'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='AliasChange',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=50)),
                ('changed_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('agent', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='alias_changes', to='agents.agent')),
                ('changed_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('from_version', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='agents.agentversion')),
                ('to_version', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='agents.agentversion')),
            ],
            options={
                'ordering': ['-changed_at', '-id'],
                'indexes': [models.Index(fields=['agent', '-changed_at'], name='alias_change_agent_recent')],
                'constraints': [models.CheckConstraint(condition=models.Q(('from_version__isnull', False), ('to_version__isnull', False), _connector='OR'), name='alias_change_names_a_version')],
            },
        ),
        migrations.CreateModel(
            name='VersionAlias',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=50)),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('agent', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='aliases', to='agents.agent')),
                ('updated_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('version', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='aliases', to='agents.agentversion')),
            ],
            options={
                'verbose_name_plural': 'version aliases',
                'ordering': ['agent', 'name'],
                'constraints': [models.UniqueConstraint(django.db.models.functions.text.Lower('name'), models.F('agent'), name='alias_name_ci_unique_per_agent'), models.CheckConstraint(condition=models.Q(('name__regex', '^[A-Za-z][A-Za-z0-9_-]{0,49}$')), name='alias_name_format'), models.CheckConstraint(condition=models.Q(('name__iregex', '^(latest|history)$'), _negated=True), name='alias_name_not_reserved')],
            },
        ),
        migrations.RunSQL(APPEND_ONLY_SQL, DROP_SQL),
    ]
