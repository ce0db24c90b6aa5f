"""The agents app's side of the interfaces others declare, provided at start-up (agents.apps):
agentbuilder.access, the request's environment and the environment grants
(agents.access.permissions) for the project package and the apps that do not import
agents; retrieval.access, the same grants as they hold for an environment's documents and
the RAG agents the admin's "Try retrieval" offers."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from agentbuilder.users import User
from agents.access.environments import environment_resolve
from agents.access.permissions import (
    Action,
    agents_with,
    environments_with,
    in_environments_with,
    may_change_row,
    require_on_environment,
)
from agents.configs import config_parse
from agents.models import Agent, AgentType, Environment
from agents.selectors.versions import version_get
from retrieval.access import Grant
from retrieval.configs import RagSettings

# What adding, changing and deleting an environment-scoped row needs.
WRITE = Action.EDIT


class EnvironmentAccess:
    environment_model = Environment

    def request_environment(
        self, *, user: User, claim: str | None, header: str | None
    ) -> Environment:
        return environment_resolve(user=user, claim=claim, header=header)

    def readable_rows(self, user: User, *, path: str, global_rows: bool) -> Q:
        return in_environments_with(user, Action.READ, path=path, global_rows=global_rows)

    def writable_environments(self, user: User) -> QuerySet[Environment]:
        return environments_with(user, WRITE)

    def may_write_row(self, user: User, environment: Environment | None) -> bool:
        return may_change_row(user, WRITE, environment)


# A document's grants are its environment's agent permissions of the same names.
DOCUMENT_ACTIONS = {grant: Action[grant.name] for grant in Grant}


class DocumentAccess:
    def environments_with(self, user: User, grant: Grant) -> QuerySet[Environment]:
        return environments_with(user, DOCUMENT_ACTIONS[grant])

    def require(self, user: User, environment: Environment, grant: Grant) -> None:
        require_on_environment(user, environment, DOCUMENT_ACTIONS[grant])

    def rag_agents(self, user: User) -> QuerySet[Agent]:
        return agents_with(user, Action.READ).filter(agent_type=AgentType.RAG)

    def rag_settings(self, agent: Agent) -> RagSettings:
        version = version_get(agent=agent, ref="latest")
        config = config_parse(agent.agent_type, version.config)
        assert isinstance(config, RagSettings)
        return config
