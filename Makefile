# survscan: set up the virtualenv, serve the app, run the tests and the benchmarks.
#
# The venv is (re)filled whenever pyproject.toml is newer than its stamp file:
#   .venv/.stamp        -e .[app,test]   (make test, make test-fast)
#   .venv/.stamp-app    -e .[app]        (make run)
#   .venv/.stamp-bench  -e .[bench]      (make bench)

SHELL       := /bin/bash
PYTHON      ?= python3
VENV        := .venv
PY          := $(VENV)/bin/python
PORT        ?= 5006
# worksteal: a worker that runs dry takes tests queued for the other (the default hands each
# worker its share up front, and one was left alone with the last long tests: 12 min 17 s of
# tests against 10 min 22 s on 2 cores); --durations names the slowest tests at the end
PYTEST_ARGS ?= -q -n 2 --dist worksteal --durations=15
CHROMIUM    := /usr/bin/chromium
GXX         := /usr/bin/g++
SUDO        := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
APT_INSTALL := $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y

.PHONY: run test test-fast screenshots bench device-wheels clean distclean

# `make run` serves on this machine only. Serving to a network is explicit: ADDRESS=0.0.0.0
# with ORIGIN (the host:port users type) and AUTH (Panel's basic auth: a password, or a JSON
# file of {"user": "password"}); DATA_DIRS are the folders the DuckDB and OMOP tabs may open.
# AUTH turns the login on at any address, 127.0.0.1 included.
ADDRESS     ?= 127.0.0.1
ORIGIN      ?=
AUTH        ?=
DATA_DIRS   ?=
SERVE_FLAGS := --port $(PORT) --address $(ADDRESS)
ifeq ($(ADDRESS),127.0.0.1)
SERVE_FLAGS += --allow-websocket-origin=localhost:$(PORT) --allow-websocket-origin=127.0.0.1:$(PORT)
else
ifeq ($(and $(ORIGIN),$(AUTH)),)
$(error serving on $(ADDRESS) needs ORIGIN=host:port and AUTH=password-or-users.json (see README))
endif
SERVE_FLAGS += --allow-websocket-origin=$(ORIGIN)
endif
ifneq ($(AUTH),)
SERVE_ENV   := PANEL_BASIC_AUTH='$(AUTH)' \
               PANEL_COOKIE_SECRET=$$(python3 -c 'import secrets; print(secrets.token_hex(32))')
endif

run: $(VENV)/.stamp-app
	@echo "python -m app.serve app/main.py $(SERVE_FLAGS)$(if $(AUTH), (basic auth on))"
	@$(SERVE_ENV) SURVSCAN_DATA_DIRS='$(DATA_DIRS)' $(VENV)/bin/python -m app.serve app/main.py $(SERVE_FLAGS)

test: $(VENV)/.stamp $(CHROMIUM) $(GXX)
	$(PY) -m pytest $(PYTEST_ARGS)

# The edit-test loop: every test but the browser ones and those marked slow (the CUDA
# emulator's runs among them: `pytest -k emulator` runs those alone).
test-fast: $(VENV)/.stamp $(GXX)
	$(PY) -m pytest $(PYTEST_ARGS) -m "not browser and not slow"

# The app's pages as pictures for a person to look at (tests/artifacts/*.png): the browser
# tests with their screenshots, which `make test` leaves out (about a minute on 2 cores).
screenshots: $(VENV)/.stamp $(CHROMIUM)
	SURVSCAN_SCREENSHOTS=1 $(PY) -m pytest $(PYTEST_ARGS) tests/browser

bench: $(VENV)/.stamp-bench
	$(PY) -m bench quick

# Debian ships venv separately (python3-venv); a failed attempt leaves a broken .venv behind.
$(PY):
	$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV) && $(SUDO) apt-get update \
		&& $(APT_INSTALL) python3-venv && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.stamp: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[app,test]'
	touch $@

$(VENV)/.stamp-app: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[app]'
	touch $@

$(VENV)/.stamp-bench: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[bench]'
	touch $@

# Wheels of the engine's dependencies that the lent GPU machines' image lacks (it has no network),
# for bench/on_device.sh: carry .device-wheels with the device tool's run.
DEVICE_WHEELS := duckdb lifelines autograd autograd-gamma bed-reader \
                 arviz==0.23.4 xarray-einstats==0.9.1 h5netcdf platformdirs
device-wheels: | $(PY)
	$(PY) -m pip download --quiet --only-binary=:all: --no-deps --python-version 3.12 \
		--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
		--platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d .device-wheels $(DEVICE_WHEELS)

# Browser tests drive Debian's Chromium through Playwright (never `playwright install`).
$(CHROMIUM):
	$(SUDO) apt-get update
	$(APT_INSTALL) chromium

# The GPU backend's kernels also run on the CPU in the tests (tests/support/cuda_emulator), built by g++.
$(GXX):
	$(SUDO) apt-get update
	$(APT_INSTALL) g++

clean:
	rm -rf build dist *.egg-info .pytest_cache .hypothesis $(VENV)/.stamp*
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
