#!/bin/sh
# Lambda Web Adapter (AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap) runs this and proxies the invocation,
# streamed, to the ASGI app on $PORT. uvloop and httptools (the chat layer ships both) are named, not
# left to "auto", so a layer without them fails at start instead of running on the slower defaults.
# --no-proxy-headers: uvicorn would otherwise take the client's address from X-Forwarded-For (the
# adapter connects from 127.0.0.1, which it trusts), text the caller writes; the app reads the
# viewer's address only from CloudFront's own header (sstools_agent/http/client_address.py).
exec python -m uvicorn --app-dir "$LAMBDA_TASK_ROOT" main:app --host 127.0.0.1 --port "${PORT:-8080}" \
	--no-access-log --loop uvloop --http httptools --no-proxy-headers
