"""The admin of documents: the list and pages (documents), the upload (upload) and "Try
retrieval" (search)."""

from retrieval.admin import documents

__all__ = ["documents"]
