"""OpenTelemetry: a run's trace context (agents.telemetry.context) and its spans, named as
the GenAI semantic conventions name them, exported at its end (agents.telemetry.spans)."""
