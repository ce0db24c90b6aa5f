# Documents and chunks arrive with the retrieval issue; migration 0001 already enables
# pgvector so every deployment proves at migrate time that the extension is there.
