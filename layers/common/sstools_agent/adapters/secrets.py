"""Secrets and parameters through Powertools parameters (cached for `max_age` seconds).

The REST API reads the agent's client credentials and the cursor signing key; the chat function
reads the same client credentials and, in AWS, the token endpoint's URL from SSM Parameter Store
(the URL names the API, which names the chat function: a parameter breaks that cycle).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.parameters import SecretsProvider, SSMProvider

from sstools_agent.adapters.aws_session import aws_session
from sstools_agent.domain.identity import ClientCredentials


class SecretsReader:
    """Reads secrets and parameters, each cached for `max_age_s` seconds."""

    def __init__(self, *, region: str, endpoint_url: str | None = None, max_age_s: int) -> None:
        session = aws_session(region)
        self._secrets = SecretsProvider(
            boto3_client=session.client("secretsmanager", endpoint_url=endpoint_url)
        )
        self._ssm = SSMProvider(boto3_client=session.client("ssm", endpoint_url=endpoint_url))
        self._max_age_s = max_age_s

    def client_credentials(self, secret_id: str) -> ClientCredentials:
        """The agent's client credentials: a JSON secret `{client_id, client_secret}`."""
        value: Any = self._secrets.get(secret_id, max_age=self._max_age_s, transform="json")
        if not isinstance(value, dict) or not {"client_id", "client_secret"} <= value.keys():
            raise ValueError(f"secret {secret_id} must hold client_id and client_secret")
        return ClientCredentials(str(value["client_id"]), str(value["client_secret"]))

    def text(self, secret_id: str) -> str:
        """A plain-text secret."""
        return str(self._secrets.get(secret_id, max_age=self._max_age_s))

    def parameter(self, name: str) -> str:
        """An SSM parameter's value."""
        return str(self._ssm.get(name, max_age=self._max_age_s))
