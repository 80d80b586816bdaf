# Two entry points for a fresh machine: `make demo` (the offline main job) and `make test-all` (the whole test suite,
# slow end-to-end tests included: what CI runs). `make test` is the fast loop (slow-marked tests left out).
# Both create .venv and install the package with the pinned development set (constraints.txt) if needed; the `test`
# extra includes every optional extra (pixel, plots, mteb, efficientnet), which the test suite needs.
PYTHON ?= python3
VENV := .venv
SBERT_NONLING_SHARED ?= ../shared
STAMP := $(VENV)/.installed

.PHONY: demo test test-all lint install clean

$(STAMP): setup.cfg setup.py constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet -c constraints.txt torch torchvision torchaudio
	$(VENV)/bin/pip install --quiet -c constraints.txt -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/sbert-nonling demo --sts-dir $(SBERT_NONLING_SHARED)/data/sts --text-file $(SBERT_NONLING_SHARED)/data/corpus/wiki1m_for_simcse.first11913.txt --image-dir $(SBERT_NONLING_SHARED)/data/images/cifar10/train --output runs/demo

test: $(STAMP)
	SBERT_NONLING_SHARED=$(SBERT_NONLING_SHARED) HF_HUB_OFFLINE=1 $(VENV)/bin/python -m pytest -q

test-all: $(STAMP)
	SBERT_NONLING_SHARED=$(SBERT_NONLING_SHARED) HF_HUB_OFFLINE=1 $(VENV)/bin/python -m pytest -q -m "slow or not slow"

# Developer checks (CI runs them before the tests): lint (ruff.toml), formatting, types (setup.cfg [mypy]).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) runs
