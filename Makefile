# `make demo` and `make test` each set up .venv on first use; later runs reuse it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean browser

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m examples.demo $(ARGS)

# The console tests drive Debian's Chromium; install it where apt can (CI runs as root), else they skip and say why.
browser:
	@command -v chromium >/dev/null || { command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] \
		&& echo "installing Debian's chromium with apt-get (the console tests drive it)" \
		&& { apt-get install -y -qq chromium >/dev/null 2>&1 \
		     || { apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null; }; } \
		|| echo "no chromium and no way to install it: the console tests will skip"; }

test: $(STAMP) browser
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	# 4 workers on 2 cores: most of the suite waits on real servers, deadlines and subprocesses
	$(BIN)/python -m pytest -n 4

bench: $(STAMP)
	$(BIN)/python -m bench.run_all

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
