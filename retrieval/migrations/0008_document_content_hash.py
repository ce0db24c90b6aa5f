import hashlib

from django.db import migrations, models


def backfill(apps, schema_editor):
    """Hash every stored document; of copies already in one environment, the oldest gets
    the hash and the others keep none: they stay (runs and datasets may name them), and
    search shows a passage they share once (retrieval.search.distinct)."""
    Document = apps.get_model("retrieval", "Document")
    hashed = set()
    documents = Document.objects.order_by("created_at", "id").only("id", "environment_id")
    for document in documents.iterator(chunk_size=100):
        source = Document.objects.filter(pk=document.pk).values_list("source", flat=True).get()
        digest = hashlib.sha256(bytes(source)).hexdigest()
        if (document.environment_id, digest) not in hashed:
            hashed.add((document.environment_id, digest))
            Document.objects.filter(pk=document.pk).update(content_hash=digest)


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0007_hnsw_m16_ef128"),
    ]

    operations = [
        migrations.AddField(
            model_name="document",
            name="content_hash",
            field=models.CharField(blank=True, default="", editable=False, max_length=64),
            preserve_default=False,
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="document",
            constraint=models.UniqueConstraint(
                condition=~models.Q(content_hash=""),
                fields=("environment", "content_hash"),
                name="document_content_unique_per_env",
            ),
        ),
    ]
