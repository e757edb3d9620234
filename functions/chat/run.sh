#!/bin/sh
# Lambda Web Adapter (AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap) runs this and proxies the invocation,
# streamed, to the ASGI app on $PORT. uvloop and httptools (the chat layer ships both) are named, not
# left to "auto", so a layer without them fails at start instead of running on the slower defaults.
exec python -m uvicorn --app-dir "$LAMBDA_TASK_ROOT" main:app --host 127.0.0.1 --port "${PORT:-8080}" \
	--no-access-log --loop uvloop --http httptools
