# ddp-ladder. `make help` lists the targets. Every target installs the virtualenv first when needed.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-requirements
TASK ?= digits
ARGS ?=
NPROC ?= 2
# The accelerate targets take the process count from their config unless NPROC is given (make accelerate-cpu NPROC=3).
ACCELERATE_NPROC = $(if $(filter command line environment,$(origin NPROC)), --num_processes $(NPROC))
# torchrun restarts over gloo failed or hung 5 times in 8 here unless workers stop sharing the rendezvous store.
TORCHRUN := TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 $(VENV)/bin/torchrun
# accelerate 1.15 launches one machine with torchrun's static rendezvous, whose store the workers always share
# (restarts then fail or hang); PET_STANDALONE=1 (torchrun's --standalone, read by the torchrun that accelerate
# runs inside) gives a c10d rendezvous on a free port instead, unshared with the variable above.
ACCELERATE := TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 PET_STANDALONE=1 $(VENV)/bin/accelerate
CONFIG ?=
# Every distributed target is checked before it launches (scripts/tools/launch_check.py): too few GPUs, a missing or
# invalid accelerate config, a port in use each stop here in one line, naming the fix.
CHECK := $(PY) scripts/tools/launch_check.py
need_gpus = @$(CHECK) --gpus "$(1)" --cpu-target "make $(2)" --target "make $@"

.DEFAULT_GOAL := help
.PHONY: help install lock demo test test-unit lint bench doctor guides browser collectives single-gpu dp ddp-spawn-2gpu ddp-2gpu ddp-amp-2gpu accelerate-2gpu fsdp-2gpu \
	ddp-spawn-cpu ddp-cpu ddp-amp-cpu accelerate-cpu fsdp-cpu clean

help: ## list the targets
	@grep -E '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([^:]+):.*## (.*)/  make \1\t\2/' | expand -t 26

install: $(STAMP) ## make .venv and install requirements.txt + tests/requirements.txt (again when they change)

$(STAMP): requirements.txt tests/requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt -r tests/requirements.txt
	@if $(PY) -m pip list 2>/dev/null | grep -qi '^nvidia-' && ! command -v nvidia-smi >/dev/null; then \
	  echo "warning: CUDA packages were installed on a machine without a GPU"; fi
	touch $@

lock: install ## after changing a pin: rewrite the resolved sets of both requirements files from .venv
	$(PY) scripts/tools/lock.py

demo: install ## the main job: every rung on the default task, one summary table
	$(PY) scripts/tools/demo.py -- --task $(TASK) $(ARGS)

OFFLINE_ENV := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_EVALUATE_OFFLINE=1

test: install browser ## the test suite, offline: lint, unit tests, then launch tests (each group's count and time)
	$(MAKE) --no-print-directory lint
	@echo "== unit tests (no training process started)"
	@start=$$(date +%s); $(OFFLINE_ENV) $(PY) -m pytest -q -m "not launch" tests $(ARGS) && \
	  echo "== unit tests: $$(( $$(date +%s) - start )) s"
	@echo "== launch tests on 2 workers (processes: the rungs under python, mp.spawn, torchrun, accelerate launch; the tools)"
	@start=$$(date +%s); $(OFFLINE_ENV) $(PY) -m pytest -q -m launch -n 2 --dist loadgroup tests $(ARGS) && \
	  echo "== launch tests: $$(( $$(date +%s) - start )) s"

test-unit: install ## the unit tests alone (about a minute)
	$(OFFLINE_ENV) $(PY) -m pytest -q -m "not launch" tests $(ARGS)

lint: install ## ruff: formatting (line length 100) and lint rules, configured in pyproject.toml
	$(VENV)/bin/ruff format --check --quiet scripts tests
	$(VENV)/bin/ruff check --quiet scripts tests

bench: install ## every rung measured side by side, as ratios (ARGS="--quick": seconds); guides/benchmarks.md
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_EVALUATE_OFFLINE=1 $(PY) scripts/tools/bench.py $(ARGS)

doctor: install ## check FILES="train.py ..." for distributed-training mistakes, preview rules too (default: the rungs, examples and labs)
	$(PY) scripts/tools/doctor.py --preview $(or $(FILES),scripts/[0-9]_*.py guides/examples/*.py scripts/labs)

guides: install ## regenerate the step guides (Markdown and side-by-side HTML) from the scripts
	$(PY) scripts/tools/make_guides.py

browser: ## Debian's chromium, for the test that renders a guide page (installed only when missing)
	@command -v chromium >/dev/null || { command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] && \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } ; } || \
	  echo "warning: no chromium and no root apt-get: the browser test will fail (apt-get install chromium)"

single-gpu: install ## rung 1: one process, one device (GPU, else CPU)
	$(PY) scripts/1_single_gpu.py --task $(TASK) $(ARGS)

dp: install ## rung 2: nn.DataParallel over the visible GPUs (runs as rung 1 on CPU)
	$(PY) scripts/2_data_parallel.py --task $(TASK) $(ARGS)

ddp-spawn-2gpu: install ## rung 3: DDP, NPROC GPUs, processes started by mp.spawn
	$(call need_gpus,$(NPROC),ddp-spawn-cpu)
	$(PY) scripts/3_ddp_spawn.py --nproc $(NPROC) --task $(TASK) $(ARGS)

ddp-2gpu: install ## rung 4: DDP under torchrun, NPROC GPUs, restartable
	$(call need_gpus,$(NPROC),ddp-cpu)
	$(TORCHRUN) --standalone --nproc_per_node=$(NPROC) scripts/4_ddp_torchrun.py --task $(TASK) $(ARGS)

ddp-amp-2gpu: install ## rung 5: DDP + bf16 autocast under torchrun, NPROC GPUs
	$(call need_gpus,$(NPROC),ddp-amp-cpu)
	$(TORCHRUN) --standalone --nproc_per_node=$(NPROC) scripts/5_ddp_amp.py --mixed-precision bf16 --task $(TASK) $(ARGS)

accelerate-2gpu: install ## rung 6: accelerate launch, 2 GPUs, bf16 (accelerate_configs/2gpu_bf16.yaml)
	@$(CHECK) --config $(or $(CONFIG),accelerate_configs/2gpu_bf16.yaml) --cpu-target "make accelerate-cpu"
	$(ACCELERATE) launch --config_file $(or $(CONFIG),accelerate_configs/2gpu_bf16.yaml)$(ACCELERATE_NPROC) \
		scripts/6_accelerate.py --task $(TASK) $(ARGS)

fsdp-2gpu: install ## rung 7: FSDP2 (fully_shard) under torchrun, NPROC GPUs
	$(call need_gpus,$(NPROC),fsdp-cpu)
	$(TORCHRUN) --standalone --nproc_per_node=$(NPROC) scripts/7_fsdp.py --task $(TASK) $(ARGS)

ddp-spawn-cpu: install ## rung 3 on CPU: NPROC processes over gloo
	@$(CHECK) --nproc "$(NPROC)"
	$(PY) scripts/3_ddp_spawn.py --nproc $(NPROC) --task $(TASK) $(ARGS)

ddp-cpu: install ## rung 4 on CPU: torchrun, NPROC processes over gloo
	@$(CHECK) --nproc "$(NPROC)"
	$(TORCHRUN) --standalone --nproc_per_node=$(NPROC) scripts/4_ddp_torchrun.py --task $(TASK) $(ARGS)

ddp-amp-cpu: install ## rung 5 on CPU: torchrun, NPROC processes, bf16 autocast
	@$(CHECK) --nproc "$(NPROC)"
	$(TORCHRUN) --standalone --nproc_per_node=$(NPROC) scripts/5_ddp_amp.py --mixed-precision bf16 --task $(TASK) $(ARGS)

accelerate-cpu: install ## rung 6 on CPU: accelerate launch, 2 processes over gloo (CONFIG: cpu_2proc.yaml)
	@$(CHECK) --config $(or $(CONFIG),accelerate_configs/cpu_2proc.yaml) --nproc "$(NPROC)"
	$(ACCELERATE) launch --config_file $(or $(CONFIG),accelerate_configs/cpu_2proc.yaml)$(ACCELERATE_NPROC) \
		scripts/6_accelerate.py --task $(TASK) $(ARGS)

fsdp-cpu: install ## rung 7 on CPU: torchrun, NPROC processes over gloo, each holding half the model
	@$(CHECK) --nproc "$(NPROC)"
	$(TORCHRUN) --standalone --nproc_per_node=$(NPROC) scripts/7_fsdp.py --task $(TASK) $(ARGS)

collectives: install ## the collectives lab: NPROC processes over gloo, every op before/after
	@$(CHECK) --nproc "$(NPROC)"
	$(TORCHRUN) --standalone --nproc_per_node=$(NPROC) scripts/labs/collectives.py

clean: ## remove outputs and the data cache (not the virtualenv)
	rm -rf out .cache
