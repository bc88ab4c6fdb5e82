# fnhost: the two commands a newcomer needs are `make start` and `make test`.
# Every recipe runs node through npm scripts or node_modules/.bin, so it gets
# Node 24 from the `node` devDependency, never the machine's own node.

SHELL := /bin/bash
NPM   ?= npm
BIN   := node_modules/.bin

# Debian packages the test suites drive for real: tmux (the CLI's interactive
# pager), chromium (the admin panel's browser tests) and bubblewrap (the sandbox
# of each runtime, docs/sandbox.md; `make start` installs it too).
TEST_SYSTEM_PACKAGES := tmux chromium bubblewrap


.PHONY: test-all test-local
.PHONY: start test test-unit test-integration typecheck install admin system-deps sandbox-deps clean

# node_modules is rebuilt when a manifest or the lock file changes.
node_modules/.installed: package.json package-lock.json core/package.json runtime-image/package.json gateway/package.json operator/package.json cli/package.json admin/package.json
	@command -v $(NPM) >/dev/null || { echo "error: npm is required to install fnhost (any Node >= 18; fnhost itself runs on the Node 24 it installs)"; exit 1; }
	@# One install at a time: two make runs in one checkout would race inside node_modules.
	flock .npm-install.lock $(NPM) ci --no-audit --no-fund --loglevel=error
	@touch $@

install: node_modules/.installed

# The admin panel's static build, served by the gateway at /admin.
admin: install
	@if [ -f admin/vite.config.ts ] || [ -f admin/vite.config.js ]; then $(NPM) run --silent build -w admin; fi

start: install admin sandbox-deps
	$(NPM) run --silent start

# The sandbox of each runtime needs bubblewrap (and prlimit, util-linux): installed as root on
# Debian; otherwise named, and the gateway starts with a warning (docs/sandbox.md).
sandbox-deps:
	@if ! command -v bwrap >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing bubblewrap (the sandbox of each runtime)"; \
	    apt-get -o DPkg::Lock::Timeout=900 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq bubblewrap >/dev/null; \
	  else \
	    echo "warning: bubblewrap is not installed: functions will run WITHOUT a sandbox (install it: sudo apt-get install bubblewrap)"; \
	  fi; \
	fi

# Installs what the tests drive (as root on Debian), or names what is missing.
system-deps:
	@missing=""; \
	command -v tmux >/dev/null || missing="$$missing tmux"; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing test packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "error: the tests need these Debian packages:$$missing (run: sudo apt-get install$$missing)"; exit 1; \
	  fi; \
	fi

typecheck: install
	$(BIN)/tsc -p tsconfig.json
	$(BIN)/tsc -p admin/tsconfig.json

test-unit: install
	$(NPM) run --silent test:unit

test-integration: install admin system-deps
	$(NPM) run --silent test:integration

# Every suite: cluster-prebuild first (cold Kubernetes/helm/CoreDNS builds start
# niced in the background and overlap the other suites), the cluster suites last
# on one real single-node Kubernetes built on this machine (test/cluster/README.md).
test: cluster-prebuild typecheck test-unit test-integration test-cluster-ci

# The same without the cluster (minutes instead of up to ~40 on a cold machine).
test-local: typecheck test-unit test-integration

# Kept for habit: the same as make test.
test-all: test

clean:
	rm -rf node_modules */node_modules .fnhost test-output admin/dist

# Area fragments (targets of the cluster harness and others) live beside their code.
-include test/cluster/cluster.mk
-include charts/charts.mk
