# Entry points: `make grade` (the sample class, in Docker), `make serve` (the course service)
# and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
GRADER := $(VENV)/bin/grader
OUT ?= out

.PHONY: grade serve test test-fast test-slow unit lint image deps browser postgres clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

# The offline image path needs debootstrap; install it where we can (root on Debian).
deps:
	@command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null); } || true

# The browser tests drive Debian's Chromium through Playwright (never a downloaded browser).
CHROMIUM ?= /usr/bin/chromium
browser:
	@[ -x "$(CHROMIUM)" ] || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core fonts-liberation >/dev/null); } || \
	  { echo "Chromium is missing at $(CHROMIUM): install Debian's chromium package (apt-get install chromium)." >&2; exit 1; }

# The service and its tests run a private PostgreSQL cluster (service/devdb.py), never a
# system service: only the server's programs are needed, from Debian's archive.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null); } || \
	  { echo "PostgreSQL is missing: install Debian's postgresql package (apt-get install postgresql)." >&2; exit 1; }

serve: image postgres
	$(PY) -m service.serve

image: $(VENV)/.installed deps
	$(GRADER) image build

grade: image
	$(GRADER) grade submissions --out $(OUT) --sandbox docker

unit: $(VENV)/.installed
	$(PY) -m pytest tests/unit -q

lint: $(VENV)/.installed
	DEBUG=True $(PY) -m mypy
	DEBUG=True DATABASE_URL=postgresql://unused@127.0.0.1:1/x $(PY) -m service.manage makemigrations --check --dry-run
	$(PY) -m ruff check grader sandbox tests bench service

# `make test` is the whole suite in one run on every core (pytest-xdist, one worker per CPU;
# TEST_JOBS=0 runs it in one process): the long suites marked slow (the hostile class graded in
# Docker, a rush of students, the service's fault tests, a 40-student class) start first on one
# worker while the other takes the rest. `make test-fast` leaves the slow ones out (for working),
# `make test-slow` runs them alone. Each run ends with its slowest tests, so the suite's time can
# be kept in hand.
TEST_ENV := REQUIRE_DOCKER=1 REQUIRE_BROWSER=1 CHROMIUM=$(CHROMIUM)
TEST_JOBS ?= auto
TIMES := --durations=30 --durations-min=5
PYTEST := $(TEST_ENV) $(PY) -m pytest tests -q -n $(TEST_JOBS) $(TIMES)

test: image lint browser postgres
	$(PYTEST)

test-fast: image lint browser postgres
	$(PYTEST) -m "not slow"

test-slow: image browser postgres
	$(PYTEST) -m slow

clean:
	rm -rf $(OUT) $(VENV) .pytest_cache .mypy_cache .ruff_cache
