"""The OAuth 2.1 authorization server for MCP and A2A clients (docs/architecture.md#oauth),
on django-oauth-toolkit (DOT): its models, its token and revocation endpoints, its
authorization view under our consent page; ours are the rules a public server needs.

- `resources`: the protected resources (RFC 8707, RFC 9728) and scopes, and whether a
  token bound to one may call a URL.
- `server`: the oauthlib server (authorization code + PKCE S256, refresh) and DOT's
  validator narrowed to our resources.
- `registration`: dynamic client registration (RFC 7591) with its limits; `services`:
  registering and revoking clients, recorded in the audit log.
- `views`, `urls`: the metadata documents, registration, authorize (consent), token,
  revoke; `admin`: registered clients listed and revocable.
- `tokens`: an access token presented on the API, read back as the caller.
"""
