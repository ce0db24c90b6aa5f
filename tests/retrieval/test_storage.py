"""How chunks are laid out on disk: what search's speed depends on."""

from __future__ import annotations

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db


def test_embeddings_are_stored_main_so_they_stay_in_the_row() -> None:
    # pgvector's own default is EXTERNAL ('e'): out of line once a row passes 2 kB, read
    # back through the TOAST index for every distance an exact search computes.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attstorage FROM pg_attribute"
            " WHERE attrelid = 'retrieval_chunk'::regclass AND attname = 'embedding'"
        )
        assert cursor.fetchone() == ("m",)


def test_the_hnsw_index_links_16_neighbours_and_searches_600_candidates(settings) -> None:
    # m 16 inserts at about a third of m 32's cost; ef_search 600 keeps recall@10 >= 0.95
    # on bench/hnsw_params.py's corpus. Changing one without the other loses one of the two.
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'chunk_embedding_hnsw'")
        assert cursor.fetchone() == (["m=16", "ef_construction=128"],)
    assert settings.HNSW_EF_SEARCH >= 600
