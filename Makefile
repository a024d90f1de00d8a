# tenure: `make run` starts the server with its data in ./data;
# `make test` runs every test. Both need only Go (modules are fetched as
# needed), and make test cargo as well, for the Rust SDK, apt-get for
# the Python SDK's Debian packages (python3-venv among them; the newest
# redis-py, pytest and mypy come from PyPI with pip, in a venv), and Node
# (20 or later) with npm, for the TypeScript SDK; make sdks (part of make
# test) installs each SDK's package the way a user does.
GO       ?= go
FUZZTIME ?= 30s

.PHONY: build run cluster test test-dashboard test-rust test-python test-python-debian test-python-venv python-apt test-ts sdks vet fuzz torture clean

build:
	$(GO) build -o bin/tenure ./cmd/tenure

run: build
	./bin/tenure --addr 127.0.0.1:6379 --dir ./data

# Three nodes of a cluster on loopback (SPEC §10, docs/cluster.md), their
# data in ./data/n1 … ./data/n3; Ctrl-C stops all three. Clients follow
# the leader as a Redis Cluster's: redis-cli -c -p 7001.
CLUSTER_PEERS ?= n1=127.0.0.1:7001,n2=127.0.0.1:7002,n3=127.0.0.1:7003
cluster: build
	@mkdir -p data
	@trap 'kill $$(jobs -p) 2>/dev/null; wait' INT TERM; \
	for i in 1 2 3; do \
		./bin/tenure --node-id n$$i --peers $(CLUSTER_PEERS) --dir ./data/n$$i & \
	done; \
	wait

# vet, then every test with the race detector; the fuzz targets run their
# seed corpora (testdata/fuzz) as ordinary tests.
test:
	$(GO) vet ./...
	$(GO) test -race -timeout 9m ./...
	$(MAKE) test-rust
	$(MAKE) test-python
	$(MAKE) test-ts

# The Rust SDK (sdk/rust, on the redis crate, TLS through the system's
# OpenSSL): cargo fetches its crates (Cargo.lock pins them); its tests build
# cmd/tenure with go build and start it themselves; the sync API and the
# tokio one (--all-features). Clippy too, if installed. (make sdks runs
# sdk-rust, the day-one check, as make test does.)
# Debian's libssl-dev and pkg-config, which the TLS build needs, are
# installed with apt-get when missing (as root).
RUST_APT = libssl-dev pkg-config
test-rust: rust-deps
	cd sdk/rust && GO=$(GO) cargo test --all-features
	cd sdk/rust && cargo check --no-default-features --quiet
	@if cargo clippy --version >/dev/null 2>&1; then \
		cd sdk/rust && cargo clippy --all-targets --all-features -- -D warnings; \
	else echo "cargo clippy is not installed: skipped"; fi

# The Rust SDK as a user gets it: cargo package builds the crate, a
# throwaway cargo project depends on the unpacked package by path, and the
# seed's example (sdk/rust/examples/seed.rs) runs there against a server
# built with go build (sdk/rust/day-one.sh).
.PHONY: sdk-rust rust-deps
sdk-rust: rust-deps
	GO=$(GO) bash sdk/rust/day-one.sh

rust-deps:
	@pkg-config --exists openssl 2>/dev/null || { \
		if [ "$$(id -u)" -ne 0 ]; then \
			echo "rust-deps: needs $(RUST_APT); run as root or install them" >&2; exit 1; \
		fi; \
		echo "rust-deps: installing $(RUST_APT)"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends $(RUST_APT) >/dev/null; \
	}

# The Python SDK (sdk/python) twice, against the server built from here;
# pytest's exit 5, no test ran, is a failure too.
# - On Debian's python3 and its python3-redis (4.3), from the source folder.
#   It installs them with apt-get when missing (as root).
# - In a venv of its own (sdk/python/.venv) with the newest redis-py, pytest
#   and pytest-asyncio from PyPI: the wheel is built (python -m build) and
#   installed there, mypy --strict checks the package and, against the
#   installed wheel, sdk/day-one/example.py, and the same tests run on the
#   installed wheel (TENURE_LOCKS_INSTALLED=1), not the source.
PYTHON ?= /usr/bin/python3
PYTHON_APT = python3-redis python3-pytest python3-pytest-asyncio python3-venv
PY_VENV = sdk/python/.venv
PY_PIP  = redis pytest pytest-asyncio mypy build
PYTEST  = PYTHONDONTWRITEBYTECODE=1 GO='$(GO)'
PYTEST_FLAGS = -W error -q -p no:cacheprovider
PYTEST_RC = rc=$$?; if [ $$rc -eq 5 ]; then echo "test-python: no test ran" >&2; exit 1; fi; \
	if [ $$rc -eq 124 ]; then echo "test-python: still running after $(PYTEST_TIMEOUT): stopped" >&2; fi; exit $$rc
# A run takes about a minute; one that hangs is interrupted (SIGINT, so that
# the fixtures stop their servers) rather than left to eat CI's time.
PYTEST_TIMEOUT = 10m

test-python: test-python-debian test-python-venv

python-apt:
	@$(PYTHON) -c 'import redis.asyncio, pytest, pytest_asyncio, ensurepip' 2>/dev/null || { \
		if [ "$$(id -u)" -ne 0 ]; then \
			echo "test-python: needs $(PYTHON_APT); run as root or install them" >&2; exit 1; \
		fi; \
		echo "test-python: installing $(PYTHON_APT)"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends $(PYTHON_APT) >/dev/null; \
	}

test-python-debian: python-apt
	cd sdk/python && $(PYTEST) timeout -s INT -k 30s $(PYTEST_TIMEOUT) $(PYTHON) -m pytest $(PYTEST_FLAGS); $(PYTEST_RC)

# The venv's pytest is run as a script, not with -m, so that the current
# directory (the source) is not on sys.path; conftest.py checks it.
test-python-venv: python-apt
	test -x $(PY_VENV)/bin/python || $(PYTHON) -m venv $(PY_VENV)
	$(PY_VENV)/bin/python -m pip install -q --upgrade pip $(PY_PIP)
	rm -rf sdk/python/dist
	cd sdk/python && .venv/bin/python -m build -q --wheel --outdir dist .
	$(PY_VENV)/bin/python -m pip install -q --upgrade --force-reinstall sdk/python/dist/tenure_locks-*.whl
	@$(PY_VENV)/bin/python -c 'import redis, tenure_locks; print("test-python: redis-py", redis.__version__, "and", tenure_locks.__file__)'
	cd sdk/python && .venv/bin/mypy --strict tenure_locks
	@# The day-one example against the installed wheel's hints (py.typed), as
	@# a user's mypy sees them; redis-py's execute_command has none, hence
	@# --allow-untyped-calls.
	cd sdk/day-one && ../python/.venv/bin/mypy --strict --allow-untyped-calls \
		--cache-dir ../python/.venv/mypy-cache example.py
	cd sdk/python && TENURE_LOCKS_INSTALLED=1 $(PYTEST) timeout -s INT -k 30s $(PYTEST_TIMEOUT) .venv/bin/pytest $(PYTEST_FLAGS) \
		-o asyncio_default_fixture_loop_scope=function; $(PYTEST_RC)

# What a user does on day one (sdk/day-one/run.sh): each SDK's installable
# artifact built from a clean copy of the checkout (a Python wheel, an npm
# tarball, the Go module), installed into a throwaway project of its
# ecosystem (a fresh venv, a fresh npm project, a fresh Go module with a
# replace directive to this repository), and the seed's example run there
# against bin/tenure on a free loopback port; then the Rust SDK's own
# (sdk-rust). make sdks SDKS='python go' runs some of the three.
SDKS ?= python ts go
sdks: build python-apt
	GO='$(GO)' PYTHON='$(PYTHON)' bash sdk/day-one/run.sh $(SDKS)
	$(MAKE) sdk-rust

# The TypeScript SDK (sdk/ts): npm ci installs its dev dependencies (tsc and
# the clients it is tested over), the build compiles it to dist/, and its
# tests build cmd/tenure with go build and start it themselves.
test-ts:
	cd sdk/ts && npm ci --no-audit --no-fund && npm run build && GO=$(GO) npm test

# Every fuzz target in turn, FUZZTIME each (make fuzz FUZZTIME=10m). A new
# input is minimized for at most FUZZMIN: the targets that talk to a server
# run slowly, and Go's default minute per input stalls them. A crasher is
# written to testdata/fuzz/<Target>/: fix it, and keep it there as a seed.
FUZZMIN     ?= 5s
# FUZZTARGETS are package:Target.
FUZZTARGETS ?= resp:FuzzReader resp:FuzzDispatch resp:FuzzCommandArgs resp:FuzzUsersFile internal/dump:FuzzDecode
fuzz:
	@set -e; for t in $(FUZZTARGETS); do \
		echo "== $$t ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) ./$${t%%:*}/; \
	done

# The torture harness (torture/): the server under a nemesis of kills,
# freezes, cuts and swallowed replies, its lock clients' history checked:
# mutex keys, a semaphore key (LIMIT), a read-write key (SHARED readers,
# writers) and a key of the Redis lock recipe (SET NX PX + EVALSHA).
# A 40 s run is part of make test; make torture DURATION=30m runs a long one.
# CLUSTER=3 runs a Raft cluster of three nodes under it instead (a 60 s run
# is part of make test too): make torture CLUSTER=3 DURATION=10m.
# Pass more flags with TORTUREFLAGS, e.g. TORTUREFLAGS='-keys 5 -limit 3 -seed 42'.
DURATION ?= 60s
torture: build
	$(GO) run ./torture -server bin/tenure -duration $(DURATION) $(if $(CLUSTER),-cluster $(CLUSTER)) $(TORTUREFLAGS)

clean:
	rm -rf bin

# tenure against redis-server (Debian's redis-server package) and etcd on
# this machine: a table on stdout, results.json and chart.svg in bench/out/;
# the scenarios, EVALSHA, the lock recipe on tenure, semaphores and
# readers+writers included, are in bench/README.md.
# Pass flags with BENCHFLAGS, e.g. make bench BENCHFLAGS='-duration 2s -rounds 1'.
# make bench BENCHFLAGS=-cluster: failover and throughput of 3-node clusters (issue 20).
.PHONY: bench
bench:
	$(GO) run ./bench $(BENCHFLAGS)

# The clients people already use, for real: redis-cli, redis-py,
# node-redis, ioredis, go-redis (RESP3) and redis-benchmark against the
# lock commands, and a redis-server whose MIGRATE moves keys into tenure
# (compat/).
# Installs what is missing with apt-get and npm; fails if any check fails.
.PHONY: compat
compat: build
	bash compat/run.sh

# The dashboard in a real browser (SPEC §14; dashboard/test): Debian's
# chromium, installed with apt-get when missing (as root; never a browser
# download), driven by playwright-core from npm (npm ci: its lockfile
# pins it), against bin/tenure on loopback. Screenshots in
# dashboard/test/out/.
.PHONY: test-dashboard dashboard-deps dashboard-screenshot
test-dashboard: build dashboard-deps
	cd dashboard/test && TENURE_BIN=$(CURDIR)/bin/tenure node browser.test.mjs

dashboard-deps:
	@command -v chromium >/dev/null 2>&1 || { \
		if [ "$$(id -u)" -ne 0 ]; then \
			echo "dashboard-deps: needs Debian's chromium; run as root or apt-get install chromium" >&2; exit 1; \
		fi; \
		echo "dashboard-deps: installing chromium"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
	}
	cd dashboard/test && npm ci --no-audit --no-fund --silent

# docs/dashboard.png: a store with a few hundred keys, waiters and a loss.
dashboard-screenshot: build dashboard-deps
	cd dashboard/test && TENURE_BIN=$(CURDIR)/bin/tenure node browser.test.mjs --loaded $(CURDIR)/docs/dashboard.png
