# fnhost: the two commands a newcomer needs are `make start` and `make test`.
# Every recipe runs node through npm scripts or node_modules/.bin, so it gets
# Node 24 from the `node` devDependency, never the machine's own node.

SHELL := /bin/bash
NPM   ?= npm
BIN   := node_modules/.bin

.PHONY: test-all test-local test-busy
.PHONY: start test test-unit test-integration typecheck install admin cli-package system-deps start-deps lint-shell clean
.PHONY: bench bench-cluster

# node_modules is rebuilt when a manifest or the lock file changes.
node_modules/.installed: package.json package-lock.json core/package.json runtime-image/package.json gateway/package.json operator/package.json cli/package.json admin/package.json
	@command -v $(NPM) >/dev/null || { echo "error: npm is required to install fnhost (any Node >= 18; fnhost itself runs on the Node 24 it installs)"; exit 1; }
	@# One install at a time: two make runs in one checkout would race inside node_modules.
	flock .npm-install.lock $(NPM) ci --no-audit --no-fund --loglevel=error
	@touch $@

# The runtime's libraries (the packages Express builds req/res on), bundled into
# runtime-image/vendor/ (runtime-image/tools/bundle-libraries.mjs). A make step and not
# npm's postinstall: `npx fnhost` installs the checkout as a package, where it has no
# business building the runtime.
runtime-image/vendor/.built: node_modules/.installed runtime-image/tools/bundle-libraries.mjs runtime-image/package.json
	$(BIN)/node runtime-image/tools/bundle-libraries.mjs
	@touch $@

install: node_modules/.installed runtime-image/vendor/.built

# The admin panel's static build, served by the gateway's admin listener at /admin (FNHOST_ADMIN_PORT, default 8081).
admin: install
	@if [ -f admin/vite.config.ts ] || [ -f admin/vite.config.js ]; then $(NPM) run --silent build -w admin; fi

# The CLI as an npm package, @fnhost/cli (cli/pack/build.ts): core and every
# dependency bundled; prints the tarball, which installs with
# `npm install -g <tarball>` on any machine with Node >= 20.16 and npm.
cli-package: install
	@$(BIN)/node cli/pack/build.ts

start: install admin start-deps
	$(NPM) run --silent start

# Debian packages, installed when missing (as root on Debian) or named:
# tools/install/packages.sh keeps the lists; test/install/ tests every install
# step from an empty cache with a stand-in package manager.
start-deps:
	@tools/install/packages.sh start

system-deps:
	@tools/install/packages.sh test

# Every shell script of the repository through shellcheck (tools/lint-shell.sh).
lint-shell: system-deps
	@tools/lint-shell.sh

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
test: cluster-prebuild lint-shell typecheck test-unit chart-scan test-integration test-cluster-ci

# The same without the cluster (minutes instead of up to ~40 on a cold machine).
test-local: lint-shell typecheck test-unit chart-scan test-integration

# A suite beside busy loops, the load make test must hold under (issue 30; test/README.md,
# "Running the suites on a busy machine"): BUSY_CMD (the integration suite by default) with
# two busy loops per core, both at nice 5; the loops stop when the command ends.
BUSY_CMD ?= $(NPM) run --silent test:integration
test-busy: install admin system-deps
	PATH="$(CURDIR)/$(BIN):$$PATH" tools/busy-load.sh -- $(BUSY_CMD)

# Kept for habit: the same as make test.
test-all: test

# Every benchmark that needs no cluster, one after the other, then one table of their figures
# against performance-targets.md (bench/all.ts; BENCH_ARGS="--quick" for short runs, "--only idle,gateway").
# Takes about 15-20 minutes; on a shared machine only the ratios within one bench's run mean anything.
bench: install start-deps
	$(BIN)/node bench/all.ts $(BENCH_ARGS)

# The cluster rows (P1, P5b, P6, P7 on the test cluster: bench/cluster.ts) through the same runner.
# Brings the test cluster up as make test-cluster does (make cluster-down ends it).
bench-cluster: install cluster-up
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/node bench/all.ts --cluster $(BENCH_ARGS)

clean:
	rm -rf node_modules */node_modules .fnhost test-output admin/dist cli/.build

# Area fragments (targets of the cluster harness and others) live beside their code.
-include test/cluster/cluster.mk
-include charts/charts.mk
