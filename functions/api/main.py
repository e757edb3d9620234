"""The REST API function's Lambda handler: the FastAPI app under Mangum, with Powertools logging
(correlation id from the API Gateway request), metrics and tracing."""

from __future__ import annotations

from typing import Any

from app import create_app, logger, metrics, observability
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from mangum import Mangum

from sstools_agent.settings import ApiSettings
from sstools_agent.wiring.api import build_api

asgi = Mangum(create_app(build_api(ApiSettings())), lifespan="off")


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@observability.traced_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """API Gateway (REST, proxy integration) event in, HTTP response out."""
    return asgi(event, context)
