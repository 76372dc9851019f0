# Every target does its own set-up: a fresh clone needs only Python >= 3.11 on the PATH.
PYTHON ?= python3
VENV   := .venv
UV_VERSION := 0.13.9
STAMP  := $(VENV)/.installed
# Label Studio (a test server only) pins other versions of prefect and pyarrow than prdist's:
# it lives in its own environment, started as a process by the tests' label_studio fixture.
LS_VENV  := .venv-label-studio
LS_STAMP := $(LS_VENV)/.installed
PYTEST   := PREFECT_SERVER_ANALYTICS_ENABLED=false $(VENV)/bin/python -m pytest -q

.PHONY: demo test test-all test-unit test-dataflow test-integration lock clean bench-env docs

$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"
	$(VENV)/bin/uv pip sync --quiet --compile-bytecode --python $(VENV)/bin/python requirements.lock
	$(VENV)/bin/uv pip install --quiet --python $(VENV)/bin/python --no-deps -e .
	# The editable install compiles nothing, and where PYTHONDONTWRITEBYTECODE is set every run
	# would compile prdist and flows from source again (~0.1 s); a wheel installed by pip has them.
	$(VENV)/bin/python -m compileall -q prdist flows
	touch $(STAMP)

$(LS_STAMP): tests/support/label_studio/requirements.lock $(STAMP)
	$(PYTHON) -m venv $(LS_VENV)
	$(VENV)/bin/uv pip sync --quiet --python $(LS_VENV)/bin/python tests/support/label_studio/requirements.lock
	touch $(LS_STAMP)

## demo: the main job on embedded defaults (synthetic resource, local everything)
demo: $(STAMP)
	$(VENV)/bin/prdist run --judge-column judge --gold-budget 1000

## test: the whole default suite, every tier (slow studies included when CI=true)
test: $(STAMP) $(LS_STAMP)
	$(PYTEST) $(if $(CI),,-m "not slow")

## test-all: every test, slow ones included
test-all: $(STAMP) $(LS_STAMP)
	$(PYTEST)

## test-unit, test-dataflow, test-integration: one tier (tests/<tier>/ and its doctests), slow
## studies included when CI=true
TIER_PATHS_unit        := tests/unit prdist --ignore=prdist/dataflow --ignore=prdist/cli
TIER_PATHS_dataflow    := tests/dataflow prdist/dataflow
TIER_PATHS_integration := tests/integration prdist/cli
test-unit test-dataflow: $(STAMP)
	$(PYTEST) $(TIER_PATHS_$(@:test-%=%)) -m "$(@:test-%=%)$(if $(CI),, and not slow)"
test-integration: $(STAMP) $(LS_STAMP)
	$(PYTEST) $(TIER_PATHS_integration) -m "integration$(if $(CI),, and not slow)"

## docs: the documentation site in site/ (warnings are errors; executes the tutorial on ReVerb)
docs: $(STAMP)
	$(VENV)/bin/python -m mkdocs build --strict

## lock: re-resolve requirements.lock from pyproject.toml, and the image's locks at its versions:
## the product's dependencies only (runtime) and the build backend (build) (needs the registry)
lock:
	$(VENV)/bin/uv pip compile --quiet --python-version 3.11 --extra test pyproject.toml -o requirements.lock
	$(VENV)/bin/uv pip compile --quiet --python-version 3.11 -c requirements.lock pyproject.toml -o deploy/requirements-runtime.lock
	$(VENV)/bin/python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['build-system']['requires'], sep='\n')" \
	  | $(VENV)/bin/uv pip compile --quiet --python-version 3.11 -c requirements.lock - -o deploy/requirements-build.lock
	$(VENV)/bin/uv pip compile --quiet --python-version 3.11 tests/support/label_studio/requirements.in -o tests/support/label_studio/requirements.lock

clean:
	rm -rf $(VENV) $(LS_VENV) .pytest_cache .hypothesis

## bench-env: the benchmark peers (Polars, DuckDB) in their own environment, never the product's
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed: benchmarks/requirements.txt
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r benchmarks/requirements.txt
	touch $@

bench-env: $(STAMP) $(BENCH_VENV)/.installed
