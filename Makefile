# wirelab developer entry points. `make test` is what CI runs (.ci/run).
PYTHON ?= python3
CARGO  ?= cargo

.PHONY: test deps install rust-test py-test quickstart bench nightly wheel wheel-check

test: deps install rust-test py-test

# Debian packages the tests use (tshark dissects our captures). Installed only when
# missing and when we can (root, as in CI).
deps:
	@bash scripts/install-test-deps.sh

install:
	$(PYTHON) -m pip install --quiet '.[test,ray]'

rust-test:
	$(CARGO) test --workspace --quiet

# the report tests keep their headless-Chromium screenshots here (the quickstart report's
# first screen: ci-artifacts/quickstart-report.png)
py-test:
	WIRELAB_SCREENSHOTS=$(CURDIR)/ci-artifacts $(PYTHON) -m pytest -q python/tests

quickstart:
	$(PYTHON) -m pip install --quiet . && wirelab run scenarios/quickstart.toml && wirelab report results/quickstart

# one abi3 wheel (CPython >= 3.9) for colleagues without a Rust toolchain: dist/*.whl
wheel:
	$(PYTHON) -m pip wheel --quiet --no-deps --wheel-dir dist .
	@ls dist/wirelab-*-abi3-*.whl

# the wheel installs into a fresh venv without cargo/rustc on PATH and runs the README's
# first command (a release build: minutes, hence nightly, not CI)
wheel-check:
	PYTHON=$(PYTHON) bash scripts/wheel-check.sh

bench:
	$(CARGO) run --release -p wirelab-cli -- bench

# Studies too slow for CI (`make test`). NIGHTLY_OUT collects their outputs (PROVENANCE.json,
# tables.md). Thin streams: the 2 h 05 duration test (Table 4.2 of seed 002), seed 1. Rate
# control (seed 003): every experiment (≈ 5 min). Shim (seed 004): interactive traffic and the
# SSH-handshake cost (≈ 1–3 min; the scp grid is `python -m wirelab.repro.shim_scp`).
# Modern CC (docs/reproductions/modern-cc.md): the whole study, 10 seeds (~25 min of CPU).
NIGHTLY_OUT ?= results/nightly
nightly: install wheel-check
	nice -n 10 $(PYTHON) -m wirelab.repro.thin_streams all --out $(NIGHTLY_OUT)/thin-streams --only duration,d300 --seeds 1
	nice -n 10 $(PYTHON) -m wirelab.repro.rate_control all --out $(NIGHTLY_OUT)/rate-control
	nice -n 10 $(PYTHON) -m wirelab.repro.shim_interactive --out $(NIGHTLY_OUT)/shim-interactive
	nice -n 10 $(PYTHON) -m wirelab.repro.modern_cc --out $(NIGHTLY_OUT)/modern-cc
