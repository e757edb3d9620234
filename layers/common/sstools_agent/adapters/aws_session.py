"""boto3 sessions whose clients can drop their pooled connections all at once.

Every adapter makes its boto3 clients (and resources) through `aws_session`, so the process
knows each live client: after a SnapStart restore `drop_pooled_connections` closes their
connection pools, since a connection opened before the snapshot is one socket shared by every
environment restored from it (and dead in all of them). A client opens new connections on its
next call; its credentials are botocore's, which refresh themselves.
"""

from __future__ import annotations

import weakref
from typing import Any

import boto3

_LIVE: weakref.WeakSet[Any] = weakref.WeakSet()
"""Every client made through `aws_session` and still referenced."""


class TrackedSession(boto3.session.Session):  # type: ignore[misc]  # boto3 has no hints
    """A boto3 session that records the clients it makes (a resource's too)."""

    def client(self, *args: Any, **kwargs: Any) -> Any:
        """boto3's `client`, recorded."""
        made = super().client(*args, **kwargs)
        _LIVE.add(made)
        return made

    def resource(self, *args: Any, **kwargs: Any) -> Any:
        """boto3's `resource`, its client recorded."""
        made = super().resource(*args, **kwargs)
        _LIVE.add(made.meta.client)
        return made


def aws_session(region: str | None) -> TrackedSession:
    """A session in `region` whose clients `drop_pooled_connections` reaches."""
    return TrackedSession(region_name=region)


def live_clients() -> list[Any]:
    """The clients made through `aws_session` that are still in use."""
    return list(_LIVE)


def drop_pooled_connections() -> int:
    """Closes every live client's connection pools (each opens new ones when next used); how
    many clients there were."""
    clients = live_clients()
    for client in clients:
        # botocore's public surface has no way to reset a client's pool: its http session's
        # close() clears the pool manager, which is what a new client would start with.
        client._endpoint.http_session.close()
    return len(clients)
