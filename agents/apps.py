from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Agents"

    def ready(self) -> None:
        from agentbuilder import access, asgi_mounts, shutdown
        from agents.access.provider import DocumentAccess, EnvironmentAccess
        from agents.evals import runner as experiments
        from agents.runs import approvals, background, event_prune, leases, live
        from agents.telemetry import spans
        from agents.webhooks import dispatch as webhooks
        from retrieval import access as retrieval_access

        leases.register()
        # A shutdown's grace over: the runs still running end interrupted, each stream told.
        shutdown.on_grace_over(live.runs_interrupt)
        background.register()
        approvals.register()  # waiting runs past their approvalTtl end approval_expired
        event_prune.register()  # run events past RUN_EVENTS_TTL, in the same passes
        webhooks.register()  # sends deliveries wherever leases are kept
        experiments.register()  # experiments whose slots died: handed over again
        # The project package and the apps beside agents ask agentbuilder.access (retrieval
        # also retrieval.access); this app answers, so none of them imports agents.
        access.provide(EnvironmentAccess())
        retrieval_access.provide(DocumentAccess())
        # With export on, the tracer provider is in place before the first request, so the
        # MCP SDK's server spans of /v1/mcp join the runs' traces from the first call on.
        spans.enabled()
        # /v1/mcp, our MCP server, beside Django's handler (agentbuilder.asgi).
        asgi_mounts.mount("agents.protocols.mcp_server.asgi")
