# fnhost: the two commands a newcomer needs are `make start` and `make test`.
# Every recipe runs node through npm scripts or node_modules/.bin, so it gets
# Node 24 from the `node` devDependency, never the machine's own node.

SHELL := /bin/bash
NPM   ?= npm
BIN   := node_modules/.bin

.PHONY: start test test-unit test-integration typecheck install clean

# node_modules is rebuilt when the lock file changes.
node_modules/.installed: package.json package-lock.json core/package.json runtime-image/package.json gateway/package.json operator/package.json cli/package.json
	@command -v $(NPM) >/dev/null || { echo "npm is required (any Node >= 18 can install; fnhost itself runs on the Node 24 it installs)"; exit 1; }
	$(NPM) ci --no-audit --no-fund
	@touch $@

install: node_modules/.installed

start: install
	$(NPM) run --silent start

typecheck: install
	$(BIN)/tsc -p tsconfig.json

test-unit: install
	$(NPM) run --silent test:unit

test-integration: install
	$(NPM) run --silent test:integration

test: install typecheck test-unit test-integration

clean:
	rm -rf node_modules */node_modules .fnhost test-output

# Area fragments (targets of the cluster harness and others) live beside their code.
-include test/cluster/cluster.mk
