"""Versions become immutable in the database itself, and the catalogs get their rows."""

from django.db import migrations

IMMUTABLE_SQL = """
CREATE FUNCTION agents_version_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'agent versions are immutable: add a new version instead'
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER agents_version_no_update
    BEFORE UPDATE ON agents_agentversion
    FOR EACH ROW EXECUTE FUNCTION agents_version_immutable();
"""

DROP_SQL = """
DROP TRIGGER IF EXISTS agents_version_no_update ON agents_agentversion;
DROP FUNCTION IF EXISTS agents_version_immutable();
"""

ALL_TYPES = ["tool", "rag", "task"]
TOOLS = ["streaming", "tools", "structured_output"]

# The Bedrock ids named in the source documents, the offline model and an OpenAI example.
MODELS = [
    ("anthropic.claude-3-haiku-20240307-v1:0", "Claude 3 Haiku", "bedrock", ALL_TYPES, TOOLS),
    ("anthropic.claude-3-sonnet-20240229-v1:0", "Claude 3 Sonnet", "bedrock", ALL_TYPES, TOOLS),
    ("amazon.nova-micro-v1:0", "Amazon Nova Micro", "bedrock", ALL_TYPES, TOOLS),
    ("local.demo-v1", "Offline demo model", "local", ALL_TYPES, TOOLS),
    ("openai/gpt-4o-mini", "GPT-4o mini (OpenAI-compatible)", "openai", ALL_TYPES, TOOLS),
]


def seed(apps, schema_editor):
    LLMModel = apps.get_model("agents", "LLMModel")
    for model_id, name, provider, agent_types, capabilities in MODELS:
        LLMModel.objects.update_or_create(
            id=model_id,
            defaults={
                "name": name,
                "provider": provider,
                "agent_types": agent_types,
                "capabilities": capabilities,
            },
        )
    Environment = apps.get_model("agents", "Environment")
    if not Environment.objects.filter(name__iexact="default").exists():
        Environment.objects.create(
            name="default", description="The environment of requests that name none."
        )


class Migration(migrations.Migration):
    dependencies = [("agents", "0001_initial")]
    operations = [
        migrations.RunSQL(IMMUTABLE_SQL, DROP_SQL),
        migrations.RunPython(seed, migrations.RunPython.noop),
    ]
