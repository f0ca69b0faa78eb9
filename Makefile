# Two commands on a fresh machine (Python 3.11+):
#   make app    set up .venv and start the app on the bundled sample data (http://localhost:8501)
#   make test   set up .venv (with test, browser and engine extras) and run the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# torch is pinned so that pip takes the CPU build where one is on disk instead of a multi-GB CUDA build.
TORCH  ?= torch==2.13.0
PYTEST_ARGS ?=

.PHONY: app test setup setup-test chromium llama-server lint bench clean

# llama.cpp's llama-server for tests/test_llama_server_sweep.py, compiled once into ~/.cache/perfmodel/llama.cpp
# by tools/build_llama_server.sh (about 19 min of CPU: 10-30 min of wall time on 2 cores, then a no-op). With it
# built, the test must run (PERFMODEL_REQUIRE_LLAMA_SERVER=1); `make test LLAMA_SERVER=0` skips the build and
# lets that test skip.
LLAMA_SERVER ?= 1
ifeq ($(LLAMA_SERVER),1)
TEST_DEPS := llama-server
TEST_ENV  := PERFMODEL_REQUIRE_LLAMA_SERVER=1
endif

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.core: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.test: pyproject.toml $(VENV)/.core
	$(BIN)/pip install -q "$(TORCH)"
	$(BIN)/pip install -q -e '.[test,browser,engine,explain]' "$(TORCH)"
	touch $@

setup: $(VENV)/.core
setup-test: $(VENV)/.test

app: $(VENV)/.core
	$(BIN)/perfmodel app

# Debian's chromium for the real-browser tests (no browser download); skipped when not root and absent.
chromium:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
	  || echo "chromium not installed: browser tests will be skipped"; }

# cmake and a C++ compiler for llama-server (Debian packages; installed when root and missing).
llama-server: $(VENV)/.test
	@command -v cmake >/dev/null 2>&1 && command -v c++ >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake g++ ninja-build >/dev/null); } || true
	nice -n 10 env PYTHON=$(BIN)/python tools/build_llama_server.sh

test: $(VENV)/.test chromium $(TEST_DEPS)
	$(TEST_ENV) $(BIN)/pytest -q -ra $(PYTEST_ARGS)

lint: $(VENV)/.test
	$(BIN)/ruff check perfmodel tests benchmarks app.py pages

bench: $(VENV)/.test
	$(BIN)/python benchmarks/bench_import.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
