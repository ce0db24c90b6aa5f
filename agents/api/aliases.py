"""Aliases of an agent (docs/api.md#aliases): named pointers to versions (`prod` → 4), listed,
set, moved and deleted, and the history of every change.

`/aliases/history` is a route, so `history` is no alias's name (nor is `latest`): the route
only reads, so a PUT or DELETE of it is a 405 (its OPTIONS and `Allow` name GET alone, as
the document does); `History` and other spellings are refused as any reserved name is.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from agentbuilder.api.openapi import query_parameters
from agentbuilder.api.pagination import paginate
from agentbuilder.api.views import ENVIRONMENT, render
from agents.access.permissions import Action
from agents.api import schemas as s
from agents.api.views import AGENT_ID, AgentScopedView
from agents.evals.gates import alias_move
from agents.models import ALIAS_PATTERN
from agents.selectors.aliases import alias_history, alias_list
from agents.services.aliases import alias_delete

ALIAS_NAME = OpenApiParameter(
    "name",
    str,
    OpenApiParameter.PATH,
    pattern=ALIAS_PATTERN,
    description="Alias name: letters, digits, '-', '_', starting with a letter; at most 50; "
    "names ignore case; `latest` and `history` are reserved.",
)


class AliasListView(AgentScopedView):
    @extend_schema(
        operation_id="aliases_list",
        parameters=[AGENT_ID, ENVIRONMENT],
        responses={200: s.AliasList},
        tags=["aliases"],
    )
    def get(self, request: Request, agentId: str) -> Response:
        aliases = alias_list(agent=self._agent(agentId))
        return render(s.AliasList(aliases=[s.AliasOut.of(a) for a in aliases]))


class _AliasWrites(AgentScopedView):
    def _set(self, agent_id: str, name: str) -> Response:
        agent = self._agent(agent_id, Action.EDIT)
        body = self.body(s.AliasSet)
        alias = alias_move(
            user=self.request.user,
            agent=agent,
            name=name,
            version_number=body.version,
            force=body.force,
            reason=body.reason,
        )
        return render(s.AliasOut.of(alias))

    def _delete(self, agent_id: str, name: str) -> Response:
        agent = self._agent(agent_id, Action.EDIT)
        alias_delete(user=self.request.user, agent=agent, name=name)
        return Response(status=204)


class AliasDetailView(_AliasWrites):
    conflicts = True  # a gated alias's move refused by its gate

    @extend_schema(
        operation_id="aliases_set",
        parameters=[AGENT_ID, ALIAS_NAME, ENVIRONMENT],
        request=s.AliasSet,
        responses={200: s.AliasOut},
        tags=["aliases"],
        summary="Point an alias at a version: create it, or move it",
        description="Creating, moving and deleting are each recorded in the alias history. "
        "Setting an alias to the version it already names changes nothing. A version the "
        'agent does not have is refused at `["body", "version"]`. A gated alias '
        "(docs/api.md#gated-aliases) moves only when the version passes its gate: the gate's "
        "experiment is run (or a completed one of the same version, dataset revision and "
        "scorers reused) and a missed threshold is a 409 with `experimentId`, `misses` and "
        "`failingCases`; `force: true` with a `reason` skips the gate and needs AUDIT.",
    )
    def put(self, request: Request, agentId: str, name: str) -> Response:
        return self._set(agentId, name)

    @extend_schema(
        operation_id="aliases_delete",
        parameters=[AGENT_ID, ALIAS_NAME, ENVIRONMENT],
        responses={204: None},
        tags=["aliases"],
        summary="Delete an alias",
    )
    def delete(self, request: Request, agentId: str, name: str) -> Response:
        return self._delete(agentId, name)


class AliasHistoryView(AgentScopedView):
    @extend_schema(
        operation_id="aliases_history",
        parameters=[AGENT_ID, *query_parameters(s.AliasHistoryQuery), ENVIRONMENT],
        responses={200: s.AliasHistory},
        tags=["aliases"],
        summary="Every change of the agent's aliases, newest first",
        description="Who changed which alias when, from which version to which: "
        "`fromVersion` is null when the change created the alias, `toVersion` when it "
        "deleted it.",
    )
    def get(self, request: Request, agentId: str) -> Response:
        agent = self._agent(agentId)
        query = self.query(s.AliasHistoryQuery)
        changes, pagination = paginate(alias_history(agent=agent, name=query.name), query)
        return render(
            s.AliasHistory(changes=[s.AliasChangeOut.of(c) for c in changes], pagination=pagination)
        )
