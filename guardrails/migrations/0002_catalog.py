from django.db import migrations

# docs/api.md#guardrails: the catalog every deployment ships.
GUARDRAILS = [
    ("HAIP-Profanity", "Filters profane language from inputs and outputs"),
    ("HAIP-Insults-High", "Filters insulting content with high sensitivity"),
    ("HAIP-Insults-Low", "Filters insulting content with low sensitivity"),
    ("HAIP-Hate-High", "Filters hate speech with high sensitivity"),
    ("HAIP-Prompt_attack-Medium", "Detects and blocks prompt injection attacks"),
]


def seed(apps, schema_editor):
    Guardrail = apps.get_model("guardrails", "Guardrail")
    for name, description in GUARDRAILS:
        if not Guardrail.objects.filter(name=name, environment__isnull=True).exists():
            Guardrail.objects.create(name=name, description=description)


class Migration(migrations.Migration):
    dependencies = [("guardrails", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
