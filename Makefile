PY ?= .venv/bin/python

.PHONY: setup lint typecheck test bench docs demo

setup:
	bash scripts/setup.sh

lint:
	$(PY) -m ruff check src tests benchmarks experiments examples
	$(PY) -m ruff format --check src

typecheck:
	$(PY) -m mypy

test:
	$(PY) -m pytest -q

bench:
	$(PY) benchmarks/run_all.py

docs:
	@echo "docs are plain Markdown under docs/; nothing to build"

demo:
	.venv/bin/contextwarden demo
