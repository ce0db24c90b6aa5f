"""Runs carry their cost, and the catalog's models their list prices.

The prices are the providers' published on-demand prices in USD per million tokens (Bedrock's
in us-east-1), as read on the date written beside them: providers change them, and an admin
keeps them current in the admin or `PATCH /v1/models/{id}`. Cached input: the price of tokens
read from the prompt cache where the provider bills them apart (None: not offered for the
model, billed as input). The offline model is free. Only models without prices get them: a
price an admin set stays.
"""

import datetime
from decimal import Decimal

import django.core.validators
from django.db import migrations, models

TAKEN = datetime.date(2026, 11, 29)
PRICES = {  # model: (input, output, cached input)
    "anthropic.claude-3-haiku-20240307-v1:0": ("0.25", "1.25", None),
    "anthropic.claude-3-sonnet-20240229-v1:0": ("3", "15", None),
    "amazon.nova-micro-v1:0": ("0.035", "0.14", "0.00875"),
    "openai/gpt-4o-mini": ("0.15", "0.6", "0.075"),
    "local.demo-v1": ("0", "0", "0"),
}


def price(apps, schema_editor):
    LLMModel = apps.get_model("agents", "LLMModel")
    for model_id, (inputs, outputs, cached) in PRICES.items():
        LLMModel.objects.filter(
            pk=model_id, input_usd_per_mtok__isnull=True, output_usd_per_mtok__isnull=True
        ).update(
            input_usd_per_mtok=inputs,
            output_usd_per_mtok=outputs,
            cached_input_usd_per_mtok=cached,
            prices_as_of=TAKEN,
        )


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0019_evaluations'),
    ]

    operations = [
        migrations.AddField(
            model_name='llmmodel',
            name='cached_input_usd_per_mtok',
            field=models.DecimalField(blank=True, decimal_places=6, max_digits=12, null=True, validators=[django.core.validators.MinValueValidator(Decimal('0')), django.core.validators.MaxValueValidator(Decimal('1000'))]),
        ),
        migrations.AddField(
            model_name='llmmodel',
            name='prices_as_of',
            field=models.DateField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='run',
            name='cost_usd',
            field=models.DecimalField(blank=True, decimal_places=8, max_digits=14, null=True),
        ),
        migrations.AddField(
            model_name='run',
            name='models_usage',
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AlterField(
            model_name='llmmodel',
            name='input_usd_per_mtok',
            field=models.DecimalField(blank=True, decimal_places=6, max_digits=12, null=True, validators=[django.core.validators.MinValueValidator(Decimal('0')), django.core.validators.MaxValueValidator(Decimal('1000'))]),
        ),
        migrations.AlterField(
            model_name='llmmodel',
            name='output_usd_per_mtok',
            field=models.DecimalField(blank=True, decimal_places=6, max_digits=12, null=True, validators=[django.core.validators.MinValueValidator(Decimal('0')), django.core.validators.MaxValueValidator(Decimal('1000'))]),
        ),
        migrations.RunPython(price, migrations.RunPython.noop),
    ]
