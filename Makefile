# Two entry points for a fresh Debian 12 machine: `make demo` and `make test`.
PY := .venv/bin/python
STAMP := .venv/.iosched-setup-done

.PHONY: setup demo test test-fast bench docs clean

setup: $(STAMP)

$(STAMP): pyproject.toml scripts/setup.sh
	bash scripts/setup.sh

demo: $(STAMP)
	$(PY) -m iosched.demo

test: $(STAMP)
	$(PY) -m pytest -q

test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow"

bench: $(STAMP)
	$(PY) -m iosched bench

# the documentation site (MkDocs, Material theme, API reference) into site/
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict -d site

clean:
	rm -rf .venv site results/demo results/bench/*.tmp
