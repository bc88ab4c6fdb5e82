# The real single-node Kubernetes test cluster (test/cluster/README.md).
# Included by the root Makefile. Cluster tests are *.cluster.test.ts and run
# only through `make test-cluster`, never in the default `make test`.
CLUSTER_DIR := test/cluster

.PHONY: cluster-deps cluster-build cluster-up cluster-control-plane cluster-down cluster-status cluster-images test-cluster

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

test-cluster: install cluster-up
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/mocha --config $(CLUSTER_DIR)/mocharc.cluster.json
