"""Search results as plain data: the runtime reads them without touching the ORM."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Neighbour:
    """A chunk next to a hit in its document; `start`/`end` are its character offsets."""

    chunk_id: int
    position: int
    text: str
    start: int = 0
    end: int = 0


@dataclass(frozen=True)
class Node:
    chunk_id: int
    document_id: uuid.UUID
    title: str
    position: int
    text: str
    score: float
    neighbours: tuple[Neighbour, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    start: int = 0
    end: int = 0

    def source_node(self) -> dict[str, Any]:
        """The node as docs/api.md#rag-outputs lists sourceNodes."""
        return {
            "id": f"{self.document_id}:{self.position}",
            "docId": str(self.document_id),
            "objectId": str(self.metadata.get("objectId", self.document_id)),
            "chunkId": str(self.chunk_id),
            "score": round(self.score, 6),
            "text": self.text,
        }


def context_str(nodes: list[Node]) -> str:
    """The passages as a RAG prompt's {context_str} shows them: numbered, with their
    document's title (a RAG agent's prompt, the admin's "Try retrieval")."""
    return "\n\n".join(f"[{i}] ({n.title}) {n.text}" for i, n in enumerate(nodes, 1))
