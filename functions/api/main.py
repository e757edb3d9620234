"""The REST API function's Lambda handler: the FastAPI app under Mangum, with Powertools logging
(correlation id from the API Gateway request), metrics and tracing. Importing it is Lambda's
init phase; with SnapStart, the snapshot is taken after it."""

from __future__ import annotations

from typing import Any

from app import create_app, logger, metrics, observability
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from mangum import Mangum

from sstools_agent.adapters.process_state import register_runtime_hooks
from sstools_agent.settings import ApiSettings
from sstools_agent.wiring.api import build_api

deps = build_api(ApiSettings())
asgi = Mangum(create_app(deps), lifespan="off")
# SnapStart (docs/deploy.md): the Python runtime calls these around the snapshot; elsewhere
# (locally, in the tests) there is no snapshot and nothing is registered.
register_runtime_hooks(deps.prepare_snapshot, deps.renew_after_restore)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@observability.traced_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """API Gateway (REST, proxy integration) event in, HTTP response out."""
    return asgi(event, context)
