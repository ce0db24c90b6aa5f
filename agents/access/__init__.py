"""Access and tenancy: who may do what, in which environment, with which token.

- `environments`: the environment a request acts in, the ones a caller sees.
- `permissions`: the actions (`Action`), who holds them on an agent or an environment, and
  the querysets and checks every selector applies.
- `tokens`: access tokens, issued for a client's secret or a user's password and checked on
  every request; `authentication`: DRF's side of that check; `throttling`: callers told
  apart by address and account, and guesses at credentials counted.
- `api_clients`: machine callers, each a service user granted in one environment.
- `rate_limits`: the requestsPerMinute and tokensPerMinute an API client or a user may
  carry, counted across processes.
- `provider`: the answers to `agentbuilder.access` and `retrieval.access`, for the project
  package and the apps that never import agents.
- `api`: POST /v1/auth/token; `admin`: the admin pages of environments and API clients, and
  the rate limits on users' pages.

The models (`Environment`, `APIClient`, `UserLimits`, `RateWindow`, guardian's permission
tables) stay in agents.models.
"""
