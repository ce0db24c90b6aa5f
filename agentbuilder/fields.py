"""A JSON column that keeps the document as written."""

from __future__ import annotations

import json
from typing import Any

from django.db import models
from psycopg.types.json import Json


class OrderedJSONField(models.JSONField):
    """PostgreSQL `json`, not `jsonb`: jsonb re-sorts object keys, and the order of a JSON
    Schema's properties is what a model reads and how answers are laid out. Use it for
    documents that are stored and returned, never queried into."""

    def db_type(self, connection: Any) -> str:
        return "json"

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if value is None:
            return None
        return Json(value, dumps=lambda v: json.dumps(v, cls=self.encoder, ensure_ascii=False))

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        # psycopg already parses `json` columns (keeping key order); only text needs it.
        if isinstance(value, str):
            return json.loads(value, cls=self.decoder)
        return value
