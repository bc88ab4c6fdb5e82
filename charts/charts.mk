# The Helm chart (charts/fnhost) and the platform image's build context.
# Included by the root Makefile. docs/install.md explains both.
CHART_DIR := charts/fnhost

.PHONY: chart-crd chart-lint chart-scan platform-image-context

# The CRD has one source, crds/ (generated from operator/src/crd.ts); the chart carries
# a copy, which test/charts/chart.unit.test.ts checks is equal.
chart-crd:
	@mkdir -p $(CHART_DIR)/crds
	cp crds/fnhost.dev_functions.yaml $(CHART_DIR)/crds/fnhost.dev_functions.yaml

# helm lint and a render of the defaults (helm comes from the test cluster's tools, or PATH).
chart-lint: chart-crd
	@PATH="$$(test/cluster/env.sh --json 2>/dev/null | node_modules/.bin/node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{try{process.stdout.write(JSON.parse(s).toolsBin)}catch{}})'):$$PATH"; \
	  helm lint --strict $(CHART_DIR) && helm template fnhost $(CHART_DIR) --namespace fnhost-system >/dev/null && echo "chart ok"

# The policy scanner (checkov, pinned, from PyPI into ~/.cache/fnhost) over the chart with its
# defaults and documented options and over the operator's objects: zero failed checks
# (charts/scan.sh; docs/install.md, Security posture). No cluster needed.
chart-scan: install system-deps
	@charts/scan.sh

# .build/platform-image: sources, the admin panel's build and production node_modules for gateway/Dockerfile.
platform-image-context: install
	@gateway/image-context.sh
