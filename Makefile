# The two commands: `make local` runs the product, `make test` checks it. Both install what they need.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
CDK_STAMP := $(VENV)/.cdk-installed
LOCAL_STAMP := $(VENV)/.local-installed
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: dist install install-cdk local browser screenshots sqs-clients test pytest stress-loop lint format openapi bench synth deploy destroy clean

$(PY):
	python3.11 -m venv $(VENV) 2>/dev/null || python3 -m venv $(VENV)

# uv (its pin in requirements-dev.txt) installs the same pinned set as pip would, in a quarter of the time; with
# byte-code, as pip writes it, since the tests run with PYTHONDONTWRITEBYTECODE and would otherwise compile every
# module in every process they start.
UV := $(VENV)/bin/uv

$(STAMP): $(PY) requirements.txt requirements-dev.txt pyproject.toml
	$(PIP) install --quiet $$(grep -E '^uv==' requirements-dev.txt) > $(VENV)/install.log 2>&1 || (cat $(VENV)/install.log; exit 1)
	$(UV) pip install --python $(PY) --quiet --compile-bytecode -r requirements-dev.txt >> $(VENV)/install.log 2>&1 \
		|| (cat $(VENV)/install.log; exit 1)
	$(UV) pip install --python $(PY) --quiet --no-deps -e . >> $(VENV)/install.log 2>&1 || (cat $(VENV)/install.log; exit 1)
	$(PY) -c "import queue_core, queue_api, dq, moto, aws_lambda_powertools"
	touch $(STAMP)

# The CDK's Python packages start a Node.js process on import: checked only for the targets that synthesize.
$(CDK_STAMP): $(STAMP)
	JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 $(PY) -c "import aws_cdk, constructs, cdk_nag"
	touch $(CDK_STAMP)

install: $(STAMP)

install-cdk: $(CDK_STAMP)

# `make local` needs the package's [local] extra alone (the command line, moto's server), at the versions the
# tests pin; a venv that `make test` already filled has it all.
$(LOCAL_STAMP): $(PY) pyproject.toml requirements.txt requirements-dev.txt
	@if [ -f $(STAMP) ]; then echo "make local: .venv has the full development install"; else \
	echo "make local: installing dynamo-queue[local] into .venv (first run: about a minute; log: $(VENV)/install-local.log)"; \
	set -o pipefail; $(PIP) install --upgrade pip 2>&1 | tee $(VENV)/install-local.log | grep --line-buffered -E '^Successfully' || true; \
	$(PIP) install -e '.[local]' -c <(sed -e 's/\[[^]]*\]//' -e '/^-r/d' requirements.txt requirements-dev.txt) 2>&1 \
	| tee -a $(VENV)/install-local.log | grep --line-buffered -E '^(Collecting|Successfully installed|ERROR)' \
	| sed -u -e 's/ (from .*//' -e 's/^Successfully installed .*/installed./' || { cat $(VENV)/install-local.log; exit 1; }; fi
	$(PY) -c "import queue_core, queue_api, dq, moto"
	touch $(LOCAL_STAMP)

local: $(LOCAL_STAMP)
	$(VENV)/bin/dq local

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# The console's browser tests drive Debian's Chromium and chromedriver; installed here when missing.
browser:
	@test -x /usr/bin/chromium -a -x /usr/bin/chromedriver || \
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; }

# The README's pictures of the console (docs/img/console/*.png), taken by its browser tests as they go.
screenshots: install browser $(CDK)
	DQ_CONSOLE_SCREENSHOTS=1 $(VENV)/bin/pytest tests/console/test_browser.py

# Real SQS clients the tests drive unchanged: Node's, from tests/sqs_clients/package-lock.json into a folder of
# their own (not the CDK's node_modules), and aiobotocore, whose botocore is older than the project's, into
# $(VENV)/aiobotocore (its tests run it in a process of its own).
SQS_CLIENTS_NODE := tests/sqs_clients/node_modules/.package-lock.json
SQS_CLIENTS_AIO := $(VENV)/aiobotocore/.installed

$(SQS_CLIENTS_NODE): tests/sqs_clients/package.json tests/sqs_clients/package-lock.json
	cd tests/sqs_clients && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(SQS_CLIENTS_AIO): $(STAMP) tests/sqs_clients/requirements-aiobotocore.txt
	rm -rf $(VENV)/aiobotocore
	$(UV) pip install --python $(PY) --quiet --no-deps --target $(VENV)/aiobotocore \
		-r tests/sqs_clients/requirements-aiobotocore.txt
	touch $@

sqs-clients: $(SQS_CLIENTS_NODE) $(SQS_CLIENTS_AIO)

# What the tests need is installed side by side (npm, apt and uv wait on the disk and the network more than on
# the cores); the command line's synth, which no test reads (they synthesize in-process), runs beside the tests.
test: install
	$(MAKE) --no-print-directory -j4 lint browser sqs-clients install-cdk $(CDK)
	$(MAKE) --no-print-directory -j2 synth pytest

pytest: install browser sqs-clients $(CDK)
	$(VENV)/bin/pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=15

# Both stress runs side by side, RUNS times in a row, with a CPU hog on every core (docs/testing.md).
stress-loop: install
	bash tests/reliability/loaded_loop.sh

bench: install
	$(PY) -m bench.run

# The wheel and the sdist of the package, in dist/ (the version is queue_core/version.py's). Building needs only
# the build front end and backend, at requirements-dev.txt's pins: not the development toolchain.
DIST_STAMP := $(VENV)/.dist-installed
$(DIST_STAMP): $(PY) requirements-dev.txt
	@echo "make dist: installing the build backend into $(VENV): $$(grep -E '^(build|setuptools)==' requirements-dev.txt | tr '\n' ' ')"
	$(PIP) install --quiet $$(grep -E '^(build|setuptools)==' requirements-dev.txt)
	touch $(DIST_STAMP)

dist: $(DIST_STAMP)
	rm -rf dist build
	$(PY) -m build --quiet --no-isolation --sdist --wheel --outdir dist .
	rm -rf build
	@ls -1 dist

openapi: install
	$(PY) -m queue_api.openapi > docs/openapi.json
	$(PY) -m queue_api.openapi --served > layers/queue_core/python/queue_api/openapi.json

clean:
	rm -rf $(VENV) cdk.out .pytest_cache .ruff_cache tests/sqs_clients/node_modules

# ---- Infrastructure (CDK): synth, deploy and destroy -----------------------------------------------------
# The CDK command line and a supported Node.js come from package.json; synth runs offline (no notices, no
# telemetry) and writes cdk.out/*.template.json. The layer's wheels are installed once into .layer-build/.
CDK := node_modules/.bin/cdk
CDK_ENV := PATH="$(CURDIR)/node_modules/.bin:$(CURDIR)/$(VENV)/bin:$$PATH" CDK_DISABLE_CLI_TELEMETRY=true \
	JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20

$(CDK): package.json
	npm install --no-audit --no-fund --loglevel=error
	touch $(CDK)

# Settings for the stack: `make deploy CDK_ARGS="-c dynamo-queue:alarm_email=ops@example.com"`.
CDK_ARGS ?=

synth: install-cdk $(CDK)
	$(CDK_ENV) $(CDK) synth --no-notices --no-version-reporting --quiet $(CDK_ARGS)

# Deploys the assembly `synth` wrote, into the account and region of the current AWS credentials. `cdk bootstrap`
# runs only when they have no bootstrap stack, or one older than this assembly needs. Outputs: cdk-outputs.json.
deploy: synth
	$(PY) -m infra.bootstrap cdk.out || $(CDK_ENV) $(CDK) bootstrap --app cdk.out --no-notices
	$(CDK_ENV) $(CDK) deploy --app cdk.out --no-notices --require-approval never --outputs-file cdk-outputs.json

# Deletes the stack (after asking), then lists what it kept on purpose (the table with its messages, the log
# groups, the region's API Gateway logging role) and the commands that remove each.
destroy: synth
	$(CDK_ENV) $(CDK) destroy --app cdk.out --no-notices
	$(PY) -m infra.retained DynamoQueue
# ---- end of infrastructure -------------------------------------------------------------------------------
