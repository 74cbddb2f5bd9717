# Two commands on a fresh machine:  make synth STACK=dev   and   make test
# Both create .venv on first use (PyPI only): `make synth` from requirements.txt (what `pulumi up` installs), `make
# test` adds requirements-test.txt (the tests' packages, ruff and mypy), .venv-policy and .venv-datasets.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STACK ?= dev
# The policy pack's own venv: pulumi-policy pins protobuf 5 while the program's venv has protobuf 6.
POLICY_VENV ?= .venv-policy
# One venv per NeMo-RL release with the `datasets` its image runs (tests/datasets_envs/<tag>.txt): the data staging
# tests run the program and NeMo-RL's loaders in them.
DATASETS_VENVS ?= .venv-datasets
DATASETS_TAGS := $(patsubst tests/datasets_envs/%.txt,%,$(wildcard tests/datasets_envs/*.txt))

.PHONY: synth test test-unit lint datasets-venvs synth-all generated project-file policy-facts settings-doc day-two-table sizing-report ttfs-report checkov policy-check cli-check preview up destroy clean

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed requirements-test.txt
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-test.txt
	touch $@

$(POLICY_VENV)/.installed: policy/requirements.txt
	$(PYTHON) -m venv $(POLICY_VENV)
	$(POLICY_VENV)/bin/python -m pip install -q --disable-pip-version-check -r policy/requirements.txt
	touch $@

$(DATASETS_VENVS)/%/.installed: tests/datasets_envs/%.txt
	$(PYTHON) -m venv $(DATASETS_VENVS)/$*
	$(DATASETS_VENVS)/$*/bin/python -m pip install -q --disable-pip-version-check --only-binary=:all: --no-deps -r $<
	touch $@

datasets-venvs: $(foreach t,$(DATASETS_TAGS),$(DATASETS_VENVS)/$(t)/.installed)

synth: $(VENV)/.installed
	$(PY) -m synth $(STACK)

synth-all: $(VENV)/.installed
	for s in $$($(PY) -c "from synth.engine import available_stacks; print(' '.join(available_stacks()))"); do \
		$(PY) -m synth $$s || exit 1; done

# Lint, format and types first (pyproject.toml), then the whole suite; CI runs exactly this (.ci/run). Two pytest
# runs at once: the Ray tier (tests/tiers.py), serially, whose local clusters mostly wait (their jobs' steps, health
# checks) but need CPU promptly when nodes start; and the unit and graph tiers on two pytest-xdist workers at a lower
# priority (nice), which use the cores the Ray tests leave. Each prints its slowest tests (--durations); the Ray
# run's output follows the other's.
PYTEST_WORKERS ?= 2
test: lint $(POLICY_VENV)/.installed datasets-venvs
	@log=$$(mktemp -t nemo-rl-gke-ray.XXXXXX); \
	POLICY_VENV=$(POLICY_VENV) $(PY) -m pytest -q -m ray --durations=10 > $$log 2>&1 & ray=$$!; \
	POLICY_VENV=$(POLICY_VENV) nice -n 5 $(PY) -m pytest -q -m "not ray" -n $(PYTEST_WORKERS) --dist loadgroup \
		--durations=25; rest=$$?; \
	wait $$ray; ray_rc=$$?; echo "--- the Ray tier"; cat $$log; rm -f $$log; \
	[ $$rest -eq 0 ] && [ $$ray_rc -eq 0 ]

# The fast loop while editing (tests/tiers.py): at most a second per test, about a minute in all.
test-unit: $(VENV)/.installed-test
	$(PY) -m pytest -q -m unit --durations=10

lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# checkov has heavy dependencies of its own: a venv of its own, created on first use.
CHECKOV_VENV ?= .venv-checkov
$(CHECKOV_VENV)/.installed:
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install -q --disable-pip-version-check checkov==3.3.30
	touch $@

checkov: $(VENV)/.installed $(CHECKOV_VENV)/.installed
	$(PY) -m tools.checkov_scan $(STACK) --checkov $(CHECKOV_VENV)/bin/checkov

sizing-report: $(VENV)/.installed
	$(PY) -m synth.sizing_report

# The time-to-first-step block of docs/performance.md: estimates beside their bounds, and the nominal table.
ttfs-report: $(VENV)/.installed
	$(PY) -m synth.ttfs_report --write

# Every generated file, in the order they read each other (docs/settings.md reads Pulumi.yaml): from the settings'
# records Pulumi.yaml, docs/settings.md and the day-two table of docs/operations.md; from the catalog the policy
# pack's facts; from the Kueue builders the Configuration the cluster admin installs Kueue with (deploy/kueue/).
# Tests fail on a stale one.
generated: project-file settings-doc day-two-table policy-facts kueue-config

kueue-config: $(VENV)/.installed
	$(PY) -m synth.kueue_config

project-file: $(VENV)/.installed
	$(PY) -m synth.project_file

policy-facts: $(VENV)/.installed
	$(PY) -m synth.policy_facts

# docs/settings.md, generated from the settings' records (a test keeps it in step).
settings-doc: project-file
	$(PY) -m synth.settings_reference

# The day-two table of docs/operations.md, generated from the settings' records (a test keeps it in step).
day-two-table: $(VENV)/.installed
	$(PY) -m synth.day_two

# The policy pack over the offline synth of one stack, without the Pulumi CLI or a cloud account.
policy-check: $(VENV)/.installed $(POLICY_VENV)/.installed
	$(PY) -m synth.policy_check $(STACK) --policy-python $(POLICY_VENV)/bin/python

# The real CLI flow. The Pulumi CLI enforces Pulumi.yaml's requiredPulumiVersion only from 3.219.0 on, so these
# check `pulumi version` first and stop with one line. The CLI creates .venv from requirements.txt itself;
# the policy pack runs in its own venv. Plain `pulumi preview` / `pulumi up` work the same.
cli-check:
	@$(PYTHON) -m tools.cli_version

preview: cli-check $(POLICY_VENV)/.installed
	pulumi preview --stack $(STACK) --policy-pack policy

up: cli-check $(POLICY_VENV)/.installed
	pulumi up --stack $(STACK) --policy-pack policy

destroy: cli-check
	pulumi destroy --stack $(STACK)

clean:
	rm -rf build
