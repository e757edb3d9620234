# The two commands a newcomer needs are `make run` and `make test`; both set up what is missing.
SHELL := /bin/bash
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
LOCKS := layers/common/requirements.txt requirements-dev.txt
# The SAM CLI pins boto3 to another version than the layer's lock: it gets a venv of its own, inside
# ours (tests/infrastructure/test_sam_build.py runs its `sam build`).
SAM_VENV := $(VENV)/sam
SAM_STAMP := $(SAM_VENV)/.installed-stamp

.PHONY: test lint typecheck unit docs eval run token lock clean bench web web-test schema chromium \
	policy-check \
	screenshots \
	ag-ui-client gradio-client llvm-strip

# The /agent page (web/): npm ci from its lock, then a build whenever a source changed. `dist-local`
# is the local stack's build (with the demo sign-in), `dist` the deployable one (without it).
WEB_SOURCES := $(shell find web/src web/public -type f 2>/dev/null) \
	$(wildcard web/index.html web/*.config.* web/tsconfig*.json web/package.json)
WEB_STAMP := web/node_modules/.installed-stamp
# The official AG-UI client (tests/ag_ui_client/), which the integration tests run with node
# against the chat function's AG-UI endpoint: npm ci from its lock, nothing to build.
AG_UI_CLIENT_STAMP := tests/ag_ui_client/node_modules/.installed-stamp
# The official Gradio JS client, 2.x and 1.x (tests/gradio_client/), which the integration tests
# run with node against the chat function's Gradio endpoint.
GRADIO_CLIENT_STAMP := tests/gradio_client/node_modules/.installed-stamp

# Each set-up step says what it does first: on a first run they take minutes, quietly.
$(STAMP): $(LOCKS)
	@echo "==> Python packages into $(VENV) (pinned; a few minutes on a first run)"
	@test -x $(BIN)/python || "$$(scripts/find-python)" -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r layers/common/requirements.txt -r requirements-dev.txt
	@touch $@

$(SAM_STAMP): requirements-sam.txt
	@echo "==> the SAM CLI into $(SAM_VENV) (pinned)"
	@test -x $(SAM_VENV)/bin/python || "$$(scripts/find-python)" -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SAM_VENV)/bin/python -m pip install --quiet -r requirements-sam.txt
	@touch $@

$(WEB_STAMP): web/package-lock.json
	@scripts/check-node
	@echo "==> the page's npm packages into web/node_modules"
	cd web && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(AG_UI_CLIENT_STAMP): tests/ag_ui_client/package-lock.json
	@scripts/check-node
	@echo "==> the AG-UI client's npm packages into tests/ag_ui_client/node_modules"
	cd tests/ag_ui_client && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

ag-ui-client: $(AG_UI_CLIENT_STAMP)

$(GRADIO_CLIENT_STAMP): tests/gradio_client/package-lock.json
	@scripts/check-node
	@echo "==> the Gradio clients' npm packages into tests/gradio_client/node_modules"
	cd tests/gradio_client && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

gradio-client: $(GRADIO_CLIENT_STAMP)

web/dist-local/index.html: $(WEB_STAMP) $(WEB_SOURCES)
	@echo "==> the /agent page (web/ changed since its last build)"
	cd web && npm run -s build:local

web/dist/index.html: $(WEB_STAMP) $(WEB_SOURCES)
	cd web && npm run -s build

## web: build the /agent page for the local stack (`make run` does it when a source changed)
web: web/dist-local/index.html

## web-test: the page's type check, format check and unit tests (vitest), and its deployable build
web-test: $(WEB_STAMP) web/dist/index.html
	cd web && npm run -s check && npm run -s format:check && npm test --silent

## schema: export the stream events' JSON Schema and regenerate the page's TypeScript types
schema: $(STAMP) $(WEB_STAMP)
	PYTHONPATH=layers/common:. $(BIN)/python scripts/export_event_schema.py
	cd web && npm run -s gen:types

chromium:
	@scripts/ensure-chromium >/dev/null

# The layers' build strips native code with it (tests/infrastructure/test_sam_build.py runs one).
llvm-strip:
	@scripts/ensure-llvm-strip

## test: ruff, mypy, the page's checks and the whole pytest suite, browser tests included
## (creates .venv, installs web/node_modules and Debian's chromium on first use)
test: lint typecheck web-test unit

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# Two worker processes by default (a file's tests stay in one worker, with its module fixtures);
# each worker starts its own moto, sample upstream and servers. PYTEST_WORKERS=0: one process.
PYTEST_WORKERS ?= 2
unit: $(STAMP) $(SAM_STAMP) web chromium ag-ui-client gradio-client llvm-strip
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile

## docs: regenerate docs/tools.md (the tool reference) from the tool catalog
docs: $(STAMP)
	PYTHONPATH=layers/common:. $(BIN)/python scripts/tool_reference.py

## eval: the labelled scenarios through the turn service, scored (MODEL_PROVIDER picks the model)
eval: export POWERTOOLS_METRICS_DISABLED = true
eval: export POWERTOOLS_LOG_LEVEL = WARNING
eval: $(STAMP)
	PYTHONPATH=layers/common:. $(BIN)/python -m evaluation $(SETS)

## run: the local stack on 127.0.0.1:8000, or on LOCAL_PORT (moto, sample upstream, chat function,
## the stand-in model, the /agent page); state is in memory, so each start is a clean one
run: $(STAMP) web
	PYTHONPATH=layers/common:. $(BIN)/python -m local.run_stack

## policy-check: the audited calls of the last DAYS days replayed against a candidate policy
## set, e.g. `make policy-check POLICY=policy.cedar DAYS=7` (with the stage's variables)
DAYS ?= 7
policy-check: $(STAMP)
	@PYTHONPATH=layers/common:. $(BIN)/python -m scripts.policy_check --policy $(POLICY) --days $(DAYS)

## token: print a demo user's JWT for scripts, e.g. `make -s token ROLE=admin`
ROLE ?= engineer
token: $(STAMP)
	@PYTHONPATH=layers/common:. $(BIN)/python -m local.demo_users $(ROLE)

## lock: re-resolve the pinned requirement files from the *.in files (needs network to PyPI)
lock: $(STAMP)
	$(BIN)/python -m pip install --quiet uv==0.13.9
	$(BIN)/uv pip compile --python-version 3.12 -q layers/common/requirements.in -o layers/common/requirements.txt
	@# each layer installs its part of that lock: layers/common/layer_build.py
	$(BIN)/uv pip compile --python-version 3.12 -q requirements-dev.in -o requirements-dev.txt
	$(BIN)/uv pip compile --python-version 3.12 -q requirements-sam.in -o requirements-sam.txt

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache web/node_modules web/dist web/dist-local \
		tests/ag_ui_client/node_modules tests/gradio_client/node_modules

## screenshots: docs/page.md's pictures, taken by the browser tests that reach each state
screenshots: $(STAMP) web chromium
	PYTHONPATH=layers/common:. $(BIN)/python scripts/docs_screenshots.py

## bench: figures for the agent runtime, measured side by side (prints; asserts nothing)
bench: export POWERTOOLS_METRICS_DISABLED = true
bench: export POWERTOOLS_LOG_LEVEL = WARNING
bench: $(STAMP) web/dist/index.html chromium
	PYTHONPATH=layers/common:. $(BIN)/python -m bench.bench_agent
	PYTHONPATH=layers/common:. $(BIN)/python -m bench.bench_chat
	PYTHONPATH=layers/common:. $(BIN)/python -m bench.bench_gradio
	PYTHONPATH=layers/common:. $(BIN)/python -m bench.aws_calls
	PYTHONPATH=layers/common:. $(BIN)/python -m bench.first_turn
	PYTHONPATH=layers/common:. $(BIN)/python -m bench.bench_routing
	PYTHONPATH=layers/common:. $(BIN)/python -m bench.bench_page
	PYTHONPATH=layers/common:. $(BIN)/python -m bench.bench_attachments
	PYTHONPATH=layers/common:. $(BIN)/python -m bench.attachment_first_byte
	PYTHONPATH=layers/common:. $(BIN)/python -m bench.plan_cost
	PYTHONPATH=layers/common:. $(BIN)/python -m bench.cold_start
	PYTHONPATH=layers/common:. $(BIN)/python -m bench.cost
	PYTHONPATH=layers/common:. $(BIN)/python -m bench.policy_decisions
