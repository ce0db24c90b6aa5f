"""Writes of the authorization server: registering a client (RFC 7591) and revoking one
(the admin), each recorded in the audit log with its secret as "changed"."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from oauth2_provider.generators import generate_client_secret
from oauth2_provider.models import Application

from agentbuilder.users import User
from agents.access.oauth.registration import ClientRegistration
from agents.audit.services import audit_record, created, snapshot

OBJECT_TYPE = "oauthclient"
SHOWN_FIELDS = ("client_id", "name", "redirect_uris", "client_type", "authorization_grant_type")


@dataclass(frozen=True)
class RegisteredClient:
    application: Application
    client_secret: str | None  # only a confidential client has one, shown once


def oauth_client_register(*, registration: ClientRegistration) -> RegisteredClient:
    """A new client, public (PKCE alone) or confidential (a secret too), for the
    authorization code grant, its refresh included."""
    secret = generate_client_secret()
    application = Application(
        name=registration.client_name,
        redirect_uris=" ".join(registration.redirect_uris),
        client_type=Application.CLIENT_PUBLIC
        if registration.public
        else (Application.CLIENT_CONFIDENTIAL),
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        client_secret=secret,  # hashed when saved
        registration_source=Application.RegistrationSource.DCR,
    )
    with transaction.atomic():
        application.save()
        changes = created(
            {**snapshot(application, SHOWN_FIELDS), "client_secret": secret},
            secrets=["client_secret"],
        )
        audit_record(
            user=None,
            action="create",
            obj=application,
            environment=None,
            changes=changes,
            object_type=OBJECT_TYPE,
            object_repr=client_label(application),
        )
    return RegisteredClient(application, None if registration.public else secret)


def oauth_client_revoke(*, user: User, application: Application) -> None:
    """Removes the client and with it every code, access and refresh token it holds."""
    with transaction.atomic():
        audit_record(
            user=user,
            action="delete",
            obj=application,
            environment=None,
            object_type=OBJECT_TYPE,
            object_repr=client_label(application),
        )
        application.delete()


def client_label(application: Application) -> str:
    return f"{application.name or 'unnamed'} ({application.client_id})"
