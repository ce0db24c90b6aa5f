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
