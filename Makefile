# Two entry points: `make grade` (the sample class, in Docker) and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
GRADER := $(VENV)/bin/grader
OUT ?= out

.PHONY: grade test unit lint image deps browser clean

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

image: $(VENV)/.installed deps
	$(GRADER) image build

grade: image
	$(GRADER) grade submissions --out $(OUT) --sandbox docker

unit: $(VENV)/.installed
	$(PY) -m pytest tests/unit -q

lint: $(VENV)/.installed
	$(PY) -m mypy
	$(PY) -m ruff check grader sandbox tests bench

test: image lint browser
	REQUIRE_DOCKER=1 REQUIRE_BROWSER=1 CHROMIUM=$(CHROMIUM) $(PY) -m pytest tests -q

clean:
	rm -rf $(OUT) $(VENV) .pytest_cache .mypy_cache .ruff_cache
