# The two commands of the README: `make quickstart` and `make test`. Everything else is theirs.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
export VIRTUAL_ENV := $(CURDIR)/$(VENV)

.PHONY: quickstart test setup build rust-test py-test bench browser vcsim

setup: $(VENV)/.deps
$(VENV)/.deps: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "maturin>=1.5,<2"
	touch $@

# (Re)build the native module into the venv, with the Python dependencies.
build: setup
	$(BIN)/maturin develop --release --quiet --extras test,ray

quickstart: build
	$(BIN)/vmtwin run scenarios/quickstart.yaml -o results/quickstart
	$(BIN)/vmtwin report results/quickstart

rust-test:
	cargo test --release -p vmtwin-core

py-test: build browser vcsim
	$(BIN)/python -m pytest -q

test: rust-test py-test

# Headless Chromium for the report test (Debian's package; needs root, skipped otherwise).
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || echo "note: chromium not installed; the browser test will be skipped"; }

# govmomi's vCenter simulator for the live-vCenter inventory test, into the venv's bin. v0.46.3 is the
# last govmomi whose module holds the vcsim command (later ones moved it to a nested module that
# the Go module proxy does not serve, so @latest resolves to a 2018 release). Skipped without Go.
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
VCSIM_VERSION ?= v0.46.3
vcsim: setup
	@[ -x $(BIN)/vcsim ] || { [ -x "$(GO)" ] && GOBIN=$(CURDIR)/$(BIN) "$(GO)" install github.com/vmware/govmomi/vcsim@$(VCSIM_VERSION) \
	  || echo "note: vcsim not installed; the vCenter inventory test will be skipped"; }

bench: build
	$(BIN)/python benchmarks/run.py
