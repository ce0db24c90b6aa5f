"""Single sign-on for the admin: OpenID Connect through mozilla-django-oidc, its endpoints and
keys read from the issuer's discovery document; users made at their first login, their
groups taken from a claim at every login; password login narrowed by OIDC_LOCAL_LOGIN."""
