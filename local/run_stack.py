"""`make run`: the whole stack on this machine, on the embedded defaults.

moto with the template's resources (tables, buckets, the state machine, the audit bus, the
service-token key and secrets), the sample ss-tools upstream, and the chat and REST API functions
under uvicorn behind one origin, http://127.0.0.1:8000, routed as the template's API Gateway routes
them, and the /agent page (web/, built by `make run`) on that origin. Your conversations:
  curl http://127.0.0.1:{BASE_PORT}/api/assistant/conversations -H "Authorization: Bearer $TOKEN"

Ctrl-C stops everything.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from typing import TYPE_CHECKING, Final
from urllib.parse import urlencode

import uvicorn

if TYPE_CHECKING:
    from sstools_agent.settings import Settings

BASE_PORT: Final = int(os.environ.get("LOCAL_PORT", "8000"))
UPSTREAM_PORT: Final = BASE_PORT + 100
MOTO_PORT: Final = BASE_PORT + 101
SAMPLE_CONTEXT: Final = {
    "contextVersion": 1,
    "objectType": "dashboard",
    "objectId": "10",
    "objectName": "Отчёт по энергопотреблению",
    "envId": "ss-dev",
    "route": "/dashboards/10",
}


def configure_environment() -> None:
    """Settings for every part, set before anything reads them."""
    defaults = {
        "STAGE": "local",
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "AWS_REGION": "eu-central-1",
        "AWS_DEFAULT_REGION": "eu-central-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{MOTO_PORT}",
        "MOTO_PORT": str(MOTO_PORT),
        "UPSTREAM_BASE_URL": f"http://127.0.0.1:{UPSTREAM_PORT}",
        "STANDIN_TOKEN_DELAY_S": "0.02",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",  # a quiet console; the functions log INFO on Lambda
        "SERVICE_TOKEN_URL": f"http://127.0.0.1:{BASE_PORT}/api/auth/service-token",
    }
    for name, value in defaults.items():
        os.environ.setdefault(name, value)


@contextmanager
def serve_sample_upstream(settings: Settings, *, port: int = UPSTREAM_PORT) -> Iterator[str]:
    """The sample upstream as `make run` serves it; yields its base URL.

    It verifies service tokens with the REST API's JWKS, as ss-tools does, and is served with
    the protocol that resets connections, so `/_control` reset faults reset as in the tests.
    """
    from local.fault_injection import serve_with_faults  # noqa: PLC0415
    from local.sample_upstream.app import create_app  # noqa: PLC0415
    from sstools_agent.adapters.jwks import JwksUrlKeys  # noqa: PLC0415
    from sstools_agent.wiring.adapters import (  # noqa: PLC0415
        service_verifier_from,
        user_verifier_from,
    )

    jwks = JwksUrlKeys(f"http://127.0.0.1:{BASE_PORT}/.well-known/jwks.json")
    upstream = create_app(user_verifier_from(settings), service_verifier_from(settings, jwks))
    with serve_with_faults(upstream, port=port) as base_url:
        yield base_url


def banner() -> str:
    deploy = json.dumps(
        {"message": "задеплой этот дашборд в staging", "ui_context": SAMPLE_CONTEXT},
        ensure_ascii=False,
    )
    body = json.dumps(
        {"message": "какой статус у этого дашборда?", "ui_context": SAMPLE_CONTEXT},
        ensure_ascii=False,
    )
    query = urlencode({k: v for k, v in SAMPLE_CONTEXT.items() if k != "contextVersion"})
    return f"""
ss-tools agent chat — local stack

  Open the page:  http://127.0.0.1:{BASE_PORT}/agent?{query}
                  (sign in as a demo user; without parameters: http://127.0.0.1:{BASE_PORT}/agent)

  chat stream   POST http://127.0.0.1:{BASE_PORT}/api/agent/chat   (SSE)
  cancel        POST http://127.0.0.1:{BASE_PORT}/api/agent/chat/cancel
  AG-UI 1.0     POST http://127.0.0.1:{BASE_PORT}/api/agent/ag-ui   (SSE, docs/ag-ui.md)
  Gradio        Client.connect("http://127.0.0.1:{BASE_PORT}/api/agent/gradio")
                (@gradio/client, protocol sse_v3, docs/gradio.md)
  REST API      http://127.0.0.1:{BASE_PORT}/api/assistant/conversations, /api/assistant/history,
                /api/agent/conversations/<id>/active, /api/auth/service-token,
                /.well-known/jwks.json   (docs/rest-api.md)
  upstream      http://127.0.0.1:{UPSTREAM_PORT}   (sample ss-tools API, faults at /_control)
  AWS (moto)    http://127.0.0.1:{MOTO_PORT}
  model         stand-in (catalog-driven rules, not an LLM)

Everything is kept in memory (moto): a restart starts from a clean state, with no conversations.
Other ports: LOCAL_PORT=8100 make run (uses LOCAL_PORT, LOCAL_PORT+100 and LOCAL_PORT+101).

Demo users: analyst (anna.analyst), engineer (egor.engineer), admin (alla.admin), and a second
admin, second_admin (boris.admin), who approves a prod change admin asked for when the stack runs
with two approvers (PROD_APPROVERS=2 make run; the approvals: GET /api/assistant/approvals).
A user's JWT for scripts:  make -s token ROLE=admin  (or ROLE=second_admin)

Try it (streams the answer about dashboard 10 in ss-dev):
  curl -N http://127.0.0.1:{BASE_PORT}/api/agent/chat \\
    -H "Authorization: Bearer $(make -s token ROLE=engineer)" \\
    -H 'Content-Type: application/json' \\
    -d '{body}'

A confirmation: ask for a deploy (the stream ends with a confirm_required card), then confirm it
with the conversation_id and confirmation_id the card carries:
  curl -N http://127.0.0.1:{BASE_PORT}/api/agent/chat -H "Authorization: Bearer $TOKEN" \\
    -H 'Content-Type: application/json' -d '{deploy}'
  curl -N http://127.0.0.1:{BASE_PORT}/api/agent/chat -H "Authorization: Bearer $TOKEN" \\
    -H 'Content-Type: application/json' \\
    -d '{{"action": "confirm", "conversation_id": "<id>", "confirmation_id": "<card id>"}}'
  (TOKEN=$(make -s token ROLE=engineer); the card waits 300 s, then expires)

Your conversations:
  curl http://127.0.0.1:{BASE_PORT}/api/assistant/conversations -H "Authorization: Bearer $TOKEN"

Ctrl-C stops everything.
"""


def progress(step: str) -> None:
    """A line a newcomer sees while the stack starts (it takes seconds, quietly)."""
    print(f"==> starting {step}", flush=True)  # noqa: T201


def main() -> int:
    configure_environment()
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    # Imported after the environment is set: settings are read once, at entry.
    from moto.server import ThreadedMotoServer  # noqa: PLC0415

    from functions.api.app import create_app as api_app  # noqa: PLC0415
    from functions.chat.app import create_app as chat_app  # noqa: PLC0415
    from local.aws_resources import create_resources  # noqa: PLC0415
    from local.bus_rules import start_audit_pump, start_expiry_pump  # noqa: PLC0415
    from local.gateway import LocalGateway  # noqa: PLC0415
    from local.page import page_app  # noqa: PLC0415
    from local.servers import serve  # noqa: PLC0415
    from local.state_machine_tasks import deliver_over_http, start_lambda_task_pump  # noqa: PLC0415
    from sstools_agent.chat.approval_routes import SECOND_DECISION_PATH  # noqa: PLC0415
    from sstools_agent.settings import Settings  # noqa: PLC0415
    from sstools_agent.wiring.api import build_api  # noqa: PLC0415
    from sstools_agent.wiring.chat import build_chat  # noqa: PLC0415

    settings = Settings()
    progress("moto and the template's resources")
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=MOTO_PORT, verbose=False)
    moto.start()
    try:
        create_resources(os.environ["AWS_ENDPOINT_URL"], settings.aws_region)
        start_audit_pump(
            os.environ["AWS_ENDPOINT_URL"], settings.aws_region, settings.audit_bus_name
        )
        progress("the sample ss-tools upstream and the agent")
        with serve_sample_upstream(settings), ExitStack() as stack:
            chat = build_chat(settings)
            chat.agent()  # built at start, as the chat function's main.py does
            start_expiry_pump(
                os.environ["AWS_ENDPOINT_URL"],
                settings.aws_region,
                settings.audit_bus_name,
                chat.expiry_recorder(),
            )
            # The state machine's invocation with a second approver's decision, handed to the
            # chat app where Lambda Web Adapter would: moto cannot run Lambda code. A container of
            # its own (its own port, loop and clients), as Lambda would start one.
            second_decisions = stack.enter_context(
                serve(chat_app(build_chat(settings)), lifespan="on")
            )
            start_lambda_task_pump(
                os.environ["AWS_ENDPOINT_URL"],
                settings.aws_region,
                settings.confirmation_state_machine_arn,
                partial(deliver_over_http, f"{second_decisions}{SECOND_DECISION_PATH}"),
            )
            gateway = LocalGateway(
                {
                    "ChatFunction": chat_app(chat),
                    "ApiFunction": api_app(build_api(settings)),
                },
                page=page_app(settings),
            )
            print(banner(), flush=True)  # noqa: T201
            uvicorn.run(
                gateway,
                host="127.0.0.1",
                port=BASE_PORT,
                log_level="warning",
                proxy_headers=False,  # the peer is the socket's (`http.client_address`)
            )
    finally:
        moto.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
