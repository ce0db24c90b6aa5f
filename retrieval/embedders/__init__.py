"""Embedding providers: `local` (feature hashing, offline), `bedrock` (Titan v2), `openai`."""
