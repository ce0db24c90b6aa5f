"""The admin playground's protocol (docs/api.md#playground): one turn a request, NDJSON back with
everything the runtime did (tool results included), for a page to show as it happens."""
