"""The catalog says which models read images and documents a user sends.

`images`: Converse image blocks (Claude 3), OpenAI `image_url` parts (GPT-4o mini), and the
offline model, which reports what it received. `documents`: Converse document blocks
(Claude 3) and the offline model. Nova Micro reads text only.
"""

from django.db import migrations

READS = {
    "anthropic.claude-3-haiku-20240307-v1:0": ["images", "documents"],
    "anthropic.claude-3-sonnet-20240229-v1:0": ["images", "documents"],
    "local.demo-v1": ["images", "documents"],
    "openai/gpt-4o-mini": ["images"],
}


def add(apps, schema_editor):
    LLMModel = apps.get_model("agents", "LLMModel")
    for model in LLMModel.objects.filter(pk__in=READS):
        model.capabilities = [*model.capabilities, *(c for c in READS[model.pk] if c not in model.capabilities)]
        model.save(update_fields=["capabilities"])


def remove(apps, schema_editor):
    LLMModel = apps.get_model("agents", "LLMModel")
    for model in LLMModel.objects.filter(pk__in=READS):
        model.capabilities = [c for c in model.capabilities if c not in ("images", "documents")]
        model.save(update_fields=["capabilities"])


class Migration(migrations.Migration):
    dependencies = [("agents", "0006_mcp_servers")]

    operations = [migrations.RunPython(add, remove)]
