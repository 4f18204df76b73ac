# gpudirect.rdma: set-up, local control plane, lint and tests.
# `make help` lists the targets.

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
BIN := $(abspath $(VENV))/bin
STATE_DIR ?= .envtest
# make test runs its own control plane, so a demo cluster in $(STATE_DIR) is left alone.
TEST_STATE_DIR ?= .envtest/test
# pytest-xdist workers: unit tests, and integration tests each on a control plane of its own
# (tests/integration/conftest.py). The integration tests mostly wait on the simulator: more
# workers than cores keep a 2-core machine busy (13 min with three, 16 with two).
UNIT_WORKERS ?= 2
INTEGRATION_WORKERS ?= 4
export PATH := $(BIN):$(PATH)
export PYTHONPATH := $(CURDIR)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/.collections
# The upstream CRDs, CSVs and release data (never copied into this repository).
export GPUDIRECT_RDMA_SHARED ?= $(abspath $(CURDIR)/../shared)

COLLECTION_LINK := .collections/ansible_collections/gpudirect/rdma

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

$(BIN)/activate: requirements.txt requirements-test.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-test.txt
	touch $@

$(COLLECTION_LINK):
	mkdir -p $(dir $@)
	ln -sfn $(CURDIR) $@

.PHONY: venv
venv: $(BIN)/activate $(COLLECTION_LINK) ## create .venv with the pinned requirements

.PHONY: binaries
binaries: ## build (or find) kube-apiserver, kube-controller-manager, etcd and kubectl from the Go module proxy
	bash hack/build-control-plane.sh

.PHONY: cluster-up
cluster-up: venv ## start the local control plane and the simulator; kubeconfig in .envtest/kubeconfig
	$(BIN)/python -m tests.harness up --state-dir $(STATE_DIR)

.PHONY: cluster-down
cluster-down: ## stop exactly the processes cluster-up started
	@if [ -x $(BIN)/python ]; then $(BIN)/python -m tests.harness down --state-dir $(STATE_DIR); fi

.PHONY: cluster-status
cluster-status: venv ## show the processes of the local control plane
	$(BIN)/python -m tests.harness status --state-dir $(STATE_DIR)

.PHONY: demo
demo: venv ## local control plane + simulator, two fake nodes, an example inventory applied (INVENTORY=...)
	bash hack/demo.sh

.PHONY: nodes
nodes: venv ## register two fake GPU + NIC worker nodes (FABRIC=roce|infiniband)
	$(BIN)/python -m tests.simulator --kubeconfig $(STATE_DIR)/simulator.kubeconfig nodes --count 2 --fabric $(or $(FABRIC),roce)

.PHONY: lint
lint: venv ## yamllint, ruff, ansible-lint (production profile)
	$(BIN)/yamllint --strict .
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@# Its mock roles live in ANSIBLE_HOME and each run removes them at its end: one per tree, so
	@# runs in other clones or worktrees cannot pull them away mid-run.
	ANSIBLE_HOME=$(CURDIR)/.cache/ansible-lint $(BIN)/ansible-lint --profile production

.PHONY: unit
unit: venv monitoring-tools ## unit tests (no cluster)
	$(BIN)/pytest -n $(UNIT_WORKERS) tests/unit

.PHONY: monitoring-tools
monitoring-tools: ## promtool, prometheus and the prometheus-operator CRDs from the Go module proxy, for the rules' tests (cached outside the repository)
	bash hack/build-monitoring-tools.sh >/dev/null

.PHONY: sanity
sanity: venv ## ansible-test sanity, every test, on the venv's Python (no Docker, no Galaxy)
	PYTHON=$(BIN)/python hack/ansible-test.sh

.PHONY: browser
browser: ## Debian's Chromium, for the test that opens the verify report's page (installed when missing)
	bash hack/install-browser.sh

.PHONY: integration
integration: venv browser ## integration tests and the molecule scenario against their own local control plane
	@set -e; trap '$(MAKE) --no-print-directory cluster-down STATE_DIR=$(TEST_STATE_DIR)' EXIT; \
	$(MAKE) --no-print-directory cluster-up STATE_DIR=$(TEST_STATE_DIR); \
	export GPUDIRECT_RDMA_STATE_DIR=$(abspath $(TEST_STATE_DIR)) K8S_AUTH_KUBECONFIG=$(abspath $(TEST_STATE_DIR))/kubeconfig; \
	$(BIN)/pytest -n $(INTEGRATION_WORKERS) --dist loadfile --durations=25 tests/integration

.PHONY: build
build: venv ## build the collection tarball
	$(BIN)/ansible-galaxy collection build --force --output-path build

.PHONY: artifact
artifact: build ## the tarball installed and run by FQCN; the execution environment context made from it
	$(BIN)/pytest tests/artifact

.PHONY: ee
ee: build ## execution environment build context in build/ee (ansible-builder create; podman builds it)
	$(BIN)/ansible-builder create -f meta/execution-environment.yml -c build/ee --output-filename Containerfile

.PHONY: test
test: venv ## everything CI runs: lint, unit and sanity side by side, then integration, then the artifact
	@# The three checks are independent and mostly single-threaded; their output is kept whole.
	$(MAKE) --no-print-directory -j3 --output-sync=target lint unit sanity
	$(MAKE) --no-print-directory integration
	$(MAKE) --no-print-directory artifact

.PHONY: test-matrix
test-matrix: venv ## the other ansible-core releases the collection claims (tests/ansible-matrix.txt): sanity, unit, a converge and its 0-write re-run on each
	bash hack/test-matrix.sh

.PHONY: benchmark
benchmark: venv ## benchmarks (not in make test): plan + render, converged re-run against kubectl apply, gate reaction, 1,000 nodes
	$(BIN)/python benchmarks/plan_render.py
	$(BIN)/python benchmarks/cluster.py

.PHONY: benchmark-quick
benchmark-quick: venv ## the benchmarks' short run: one method, one gate round, 1,000 nodes x 1 rail
	$(BIN)/python benchmarks/plan_render.py --quick
	$(BIN)/python benchmarks/cluster.py --quick

.PHONY: render
render: venv ## render INVENTORY (default inventories/shared-device-roce) to RENDER_DIR (default ./rendered)
	$(BIN)/ansible-playbook -i $(or $(INVENTORY),inventories/shared-device-roce) playbooks/render.yml \
	  -e gpudirect_rdma_render_dir=$(abspath $(or $(RENDER_DIR),rendered))

.PHONY: docs
docs: venv ## write the variable tables of docs/ and the role READMEs from the argument specs
	$(BIN)/python hack/docs.py

.PHONY: clean
clean: cluster-down ## remove the virtual environment, build output and control plane state
	rm -rf $(VENV) .collections build $(STATE_DIR) .pytest_cache .ruff_cache

.PHONY: test-gpu
test-gpu: $(COLLECTION_LINK) ## on a machine with an NVIDIA GPU (not in make test): the pods' scripts, nccl-tests and mpirun for real, then the parsers on their output
	bash hack/test-gpu.sh
