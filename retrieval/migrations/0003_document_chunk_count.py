from django.db import migrations, models

# Documents ingested before the column existed get their count from their chunks.
BACKFILL = """
UPDATE retrieval_document d SET chunk_count = c.n
FROM (SELECT document_id, count(*) AS n FROM retrieval_chunk GROUP BY document_id) c
WHERE c.document_id = d.id
"""


class Migration(migrations.Migration):
    dependencies = [
        ("retrieval", "0002_documents"),
    ]

    operations = [
        migrations.AddField(
            model_name="document",
            name="chunk_count",
            field=models.PositiveIntegerField(db_default=0, default=0),
        ),
        migrations.RunSQL(BACKFILL, reverse_sql=migrations.RunSQL.noop),
    ]
