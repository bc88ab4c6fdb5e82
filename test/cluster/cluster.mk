# The real single-node Kubernetes test cluster (test/cluster/README.md).
# Included by the root Makefile. Cluster tests are *.cluster.test.ts; `make
# test` runs them through cluster-prebuild (first: cold builds start in the
# background and overlap the other suites) and test-cluster-ci (last: one
# cluster for every cluster test, taken down again if make test started it).
CLUSTER_DIR := test/cluster

.PHONY: cluster-deps cluster-build cluster-up cluster-control-plane cluster-down cluster-status cluster-images test-cluster cluster-prebuild test-cluster-ci

cluster-deps:
	@$(CLUSTER_DIR)/system-deps.sh

# Kubernetes, etcd, helm and CoreDNS into ~/.cache/fnhost (cold ~10-15 min, niced, parallel).
cluster-build: cluster-deps
	@$(CLUSTER_DIR)/build-bins.sh all

# Only etcd + kube-apiserver + controller-manager + scheduler (no node).
cluster-control-plane: cluster-deps
	@$(CLUSTER_DIR)/up.sh control-plane

cluster-up: install cluster-deps
	@$(CLUSTER_DIR)/up.sh all
	@echo "cluster up: eval \"\$$($(CLUSTER_DIR)/env.sh)\"  (KUBECONFIG and PATH)"

cluster-images: install
	@$(CLUSTER_DIR)/images.sh all

cluster-status:
	@$(CLUSTER_DIR)/status.sh

cluster-down:
	@$(CLUSTER_DIR)/down.sh

# Developer loop: the cluster stays up afterwards (make cluster-down ends it).
test-cluster: install cluster-up
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/mocha --config $(CLUSTER_DIR)/mocharc.cluster.json

# make test: $$PPID is make itself; the background builds end if make ends first.
cluster-prebuild:
	@$(CLUSTER_DIR)/prebuild.sh $$PPID

test-cluster-ci: install
	@$(CLUSTER_DIR)/run-tests.sh
