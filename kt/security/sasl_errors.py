"""The two kinds of SASL failure Kafka's authenticator tells apart.

SaslAuthenticationError carries a message the client may see (Kafka's
SaslAuthenticationException); SaslError's message stays in the broker's log and the
client is told only that its credentials were invalid for the mechanism (a SaslException
"may contain sensitive data like the existence of the user")."""

from __future__ import annotations


class SaslError(Exception):
    """A failed exchange whose details the client is not told."""


class SaslAuthenticationError(SaslError):
    """A failed exchange whose message goes to the client."""
