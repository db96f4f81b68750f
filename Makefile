# ddp-ladder. `make help` lists the targets. Every target installs the virtualenv first when needed.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-requirements
TASK ?= digits
ARGS ?=

.DEFAULT_GOAL := help
.PHONY: help install demo test single-gpu dp clean

help: ## list the targets
	@grep -E '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([^:]+):.*## (.*)/  make \1\t\2/' | expand -t 26

install: $(STAMP) ## make .venv and install requirements.txt (again only when requirements.txt changes)

$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@if $(PY) -m pip list 2>/dev/null | grep -qi '^nvidia-' && ! command -v nvidia-smi >/dev/null; then \
	  echo "warning: CUDA packages were installed on a machine without a GPU"; fi
	touch $@

demo: install ## the main job: every rung on the default task, one summary table
	$(PY) scripts/demo.py -- --task $(TASK) $(ARGS)

test: install ## run the test suite (offline)
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_EVALUATE_OFFLINE=1 $(PY) -m pytest -q tests $(ARGS)

single-gpu: install ## rung 1: one process, one device (GPU, else CPU)
	$(PY) scripts/1_single_gpu.py --task $(TASK) $(ARGS)

dp: install ## rung 2: nn.DataParallel over the visible GPUs (runs as rung 1 on CPU)
	$(PY) scripts/2_data_parallel.py --task $(TASK) $(ARGS)

clean: ## remove outputs and the data cache (not the virtualenv)
	rm -rf out .cache
