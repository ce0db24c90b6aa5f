from django.db import migrations

# The shipped catalog runs on the local detectors; an admin can point any row at a
# Bedrock guardrail instead.
ENGINES = {
    "HAIP-Profanity": {"detector": "profanity"},
    "HAIP-Insults-High": {"detector": "insults", "sensitivity": "high"},
    "HAIP-Insults-Low": {"detector": "insults", "sensitivity": "low"},
    "HAIP-Hate-High": {"detector": "hate", "sensitivity": "high"},
    # Prompt attacks are a property of what a user writes: never checked on answers.
    "HAIP-Prompt_attack-Medium": {
        "detector": "prompt_attack",
        "sensitivity": "medium",
        "stages": ["input"],
    },
}


def configure(apps, schema_editor):
    Guardrail = apps.get_model("guardrails", "Guardrail")
    for name, config in ENGINES.items():
        Guardrail.objects.filter(name=name, environment__isnull=True, engine_config={}).update(
            engine="local", engine_config=config
        )


class Migration(migrations.Migration):
    dependencies = [("guardrails", "0003_engines")]
    operations = [migrations.RunPython(configure, migrations.RunPython.noop)]
