# Two commands on a fresh machine (Python 3.11+):  make demo   and   make test
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck check bench bench-peers install lambda-package chromium cdk-synth asl-check

# The demo needs only the core install; the tests also need the dev tools, the CDK and the
# model code (torch==2.13.0 is pinned: pip takes the CPU build, not a multi-GB CUDA one).
$(VENV)/.core: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[local]'
	touch $@

$(VENV)/.full: $(VENV)/.core
	$(BIN)/python -m pip install --quiet -e '.[local,dev,infra,models,docs,view,ner]'
	touch $@

install: $(VENV)/.full

# Evaluate the bundled HR assistant on test_suites/demo-hr.xlsx; reports in ./evalrunner-out.
# The assistant is imperfect on purpose: its failing cases fail the run under the default
# policy (verdict FAILED, exit 1), which is the demo working; any other failure stops make.
demo: $(VENV)/.core
	$(BIN)/evalrunner demo || test $$? -eq 1

# The report's browser test renders report.html in headless Debian Chromium.
chromium:
	@command -v chromium >/dev/null || { echo "installing Debian's chromium (apt-get)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The deployment's Node toolchain, pinned in package.json / package-lock.json (Node 22): the
# CDK CLI and asl-validator (tests/infra/test_checks.py runs it on the synthesised definition).
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund

# The README's test command, and what .ci/run calls: the linter, the type checker, the tests.
test: install chromium node_modules/.package-lock.json lint typecheck
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy, strict on evalrunner/, lambdas/, gpu_tasks/, infra/ (the [tool.mypy] section of pyproject.toml)
typecheck: install
	$(BIN)/python -m mypy

# The same as make test, under the name other projects use.
check: test

bench: install
	$(BIN)/python bench/bench_engine.py 200 2000

# Side by side with Ragas, DeepEval and promptfoo (bench/peers.py; installs each peer once
# under ~/.cache/evalrunner-bench/peers from the pins in bench/peer_envs/).
bench-peers: install
	$(BIN)/python bench/peers.py

# The Lambda functions' dependencies as a layer directory (PyPI wheels for Python 3.12 on
# x86_64, no Docker): cdk synth / cdk deploy need it (README, "Deploy").
lambda-package: install
	$(BIN)/python -m infra.lambda_package build/lambda-deps

# cdk synth through the pinned CLI (never a floating npx aws-cdk@2); offline.
cdk-synth: install node_modules/.package-lock.json
	npx cdk synth --quiet

# The state machine as CloudFormation holds it (placeholders substituted), checked by the
# pinned asl-validator.
asl-check: install node_modules/.package-lock.json
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/infra/test_checks.py -k asl_validator
