{{/* Names, labels and shared fragments of the fnhost chart. */}}

{{- define "fnhost.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* <release>-fnhost, or the release name when it already says fnhost; at most 40 characters so that suffixes fit. */}}
{{- define "fnhost.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "fnhost.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every object; pass (dict "ctx" $ "component" "gateway"). */}}
{{- define "fnhost.labels" -}}
helm.sh/chart: {{ include "fnhost.chart" .ctx }}
{{ include "fnhost.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: fnhost
{{- with .ctx.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "fnhost.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fnhost.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end -}}

{{- define "fnhost.gateway.name" -}}{{ include "fnhost.fullname" . }}-gateway{{- end -}}
{{- define "fnhost.operator.name" -}}{{ include "fnhost.fullname" . }}-operator{{- end -}}
{{- define "fnhost.mongodb.name" -}}{{ include "fnhost.fullname" . }}-mongodb{{- end -}}

{{/* repository@digest when a digest is given (what runs is then exactly the image built), else repository:tag. */}}
{{- define "fnhost.imageRef" -}}
{{- if .image.digest -}}
{{- printf "%s@%s" .image.repository .image.digest -}}
{{- else -}}
{{- printf "%s:%s" .image.repository (default .appVersion .image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "fnhost.image" -}}
{{- include "fnhost.imageRef" (dict "image" .Values.image "appVersion" .Chart.AppVersion) -}}
{{- end -}}

{{- define "fnhost.runtimeImage" -}}
{{- include "fnhost.imageRef" (dict "image" .Values.runtimeImage "appVersion" .Chart.AppVersion) -}}
{{- end -}}

{{/* The gateway as pods reach it (KV, policy checks, scheduled runs). */}}
{{/* The gateway's ClusterIP Service for pods: its HTTP port and the egress proxy's (never on a NodePort or LoadBalancer). */}}
{{- define "fnhost.gateway.internalName" -}}{{ include "fnhost.gateway.name" . | trunc 54 | trimSuffix "-" }}-internal{{- end -}}

{{- define "fnhost.gateway.internalHost" -}}
{{- printf "%s.%s.svc.%s" (include "fnhost.gateway.internalName" .) .Release.Namespace .Values.clusterDomain -}}
{{- end -}}

{{- define "fnhost.gateway.internalUrl" -}}
{{- printf "http://%s:8080" (include "fnhost.gateway.internalHost" .) -}}
{{- end -}}

{{- define "fnhost.gateway.egressProxyUrl" -}}
{{- printf "http://%s:%v" (include "fnhost.gateway.internalHost" .) .Values.gateway.egressPort -}}
{{- end -}}

{{/* The gateway pods' selector labels as key=value,key=value (the operator's FNHOST_GATEWAY_POD_LABELS). */}}
{{- define "fnhost.gateway.podLabelsFlat" -}}
{{- $labels := include "fnhost.selectorLabels" (dict "ctx" . "component" "gateway") | fromYaml -}}
{{- $pairs := list -}}
{{- range $k, $v := $labels }}{{ $pairs = append $pairs (printf "%s=%s" $k $v) }}{{ end -}}
{{- join "," $pairs -}}
{{- end -}}

{{/* The base of invocation URLs. */}}
{{- define "fnhost.publicUrl" -}}
{{- if .Values.gateway.publicUrl -}}
{{- .Values.gateway.publicUrl | trimSuffix "/" -}}
{{- else if and .Values.ingress.enabled .Values.ingress.host -}}
{{- printf "%s://%s" (ternary "https" "http" (ne .Values.ingress.tlsSecretName "")) .Values.ingress.host -}}
{{- else -}}
{{- printf "http://%s.%s.svc.%s:%v" (include "fnhost.gateway.name" .) .Release.Namespace .Values.clusterDomain .Values.gateway.service.port -}}
{{- end -}}
{{- end -}}

{{/* Secrets: names and keys (the chart's own, or the existing ones named in values). */}}
{{- define "fnhost.adminSecret" -}}{{ default (printf "%s-admin" (include "fnhost.fullname" .)) .Values.adminToken.existingSecret }}{{- end -}}
{{- define "fnhost.tokenKeySecret" -}}{{ default (printf "%s-token-key" (include "fnhost.fullname" .)) .Values.platform.existingTokenKeySecret }}{{- end -}}
{{- define "fnhost.metricsSecret" -}}{{ default (printf "%s-metrics" (include "fnhost.fullname" .)) .Values.metrics.auth.existingSecret }}{{- end -}}
{{- define "fnhost.mongodbSecret" -}}{{ default (printf "%s-mongodb" (include "fnhost.fullname" .)) .Values.mongodb.existingSecret }}{{- end -}}

{{/* The namespace Functions are watched in ("" = all) and the default namespace of the management API. */}}
{{- define "fnhost.watchNamespace" -}}{{ .Values.functions.watchNamespace }}{{- end -}}
{{- define "fnhost.defaultNamespace" -}}{{ default .Values.gateway.defaultNamespace .Values.functions.watchNamespace }}{{- end -}}

{{/* Pod and container hardening shared by the gateway and the operator. A uid above the
host's own range (10001, as the platform image's USER): a container escape lands on no
host account's files. fsGroup lets the uid read the mounted Secret files (mode 0440). */}}
{{- define "fnhost.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "fnhost.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}

{{/* A value that must be set: fails the render with a message naming it. */}}
{{- define "fnhost.validate" -}}
{{- if and .Values.mongodb.internal.enabled (or .Values.mongodb.url .Values.mongodb.existingSecret) -}}
{{- fail "mongodb.internal.enabled=true conflicts with mongodb.url / mongodb.existingSecret: use one MongoDB" -}}
{{- end -}}
{{- if and .Values.ingress.enabled (not .Values.ingress.host) -}}
{{- fail "ingress.enabled=true needs ingress.host" -}}
{{- end -}}
{{- if and .Values.ingress.enabled .Values.ingress.adminHost (eq .Values.ingress.adminHost .Values.ingress.host) -}}
{{- fail "ingress.adminHost must differ from ingress.host: the admin panel needs an origin apart from function pages (docs/security.md)" -}}
{{- end -}}
{{- range .Values.ingress.paths -}}
{{- if or (eq . "/") (hasPrefix "/admin" .) -}}
{{- fail (printf "ingress.paths must not hold %s: the admin panel is served on ingress.adminHost only (docs/security.md)" .) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.metrics.auth.enabled .Values.metrics.auth.token (lt (len .Values.metrics.auth.token) 16) -}}
{{- fail "metrics.auth.token must be at least 16 characters" -}}
{{- end -}}
{{- if eq (int .Values.gateway.service.port) (int .Values.gateway.service.adminPort) -}}
{{- fail "gateway.service.adminPort must differ from gateway.service.port" -}}
{{- end -}}
{{- end -}}

{{/* The admin panel's URL, when the chart knows one (the Ingress's admin host). */}}
{{- define "fnhost.adminUrl" -}}
{{- if and .Values.ingress.enabled .Values.ingress.adminHost -}}
{{- printf "%s://%s" (ternary "https" "http" (ne (default .Values.ingress.tlsSecretName .Values.ingress.adminTlsSecretName) "")) .Values.ingress.adminHost -}}
{{- end -}}
{{- end -}}

{{/* What the gateway may do: read Functions and EndpointSlices, write Functions (the management API) and their status (invocation feedback), list pods (only to tell an OOM-killed container from a crash). Nothing else: no Secrets, no workloads. */}}
{{- define "fnhost.gateway.rules" -}}
- apiGroups: ["fnhost.dev"]
  resources: ["functions"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["fnhost.dev"]
  resources: ["functions/status"]
  verbs: ["patch"]
- apiGroups: ["discovery.k8s.io"]
  resources: ["endpointslices"]
  verbs: ["list", "watch"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list"]
# The NetworkPolicy of the function pods in each namespace that has Functions.
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["get", "create", "patch"]
{{- if gt (int .Values.pool.size) 0 }}
# The pool (docs/security.md "The pool of generic pods"): claiming a generic pod is a conditional
# label patch, of a pod found by a watch of the generic pods; the Event on the Function says which
# path served a cold start.
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["watch", "patch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create"]
{{- end }}
{{- end -}}

{{/* What the operator may do (docs/operator.md, operator/deploy/rbac.yaml): only what it owns. */}}
{{- define "fnhost.operator.rules" -}}
- apiGroups: ["fnhost.dev"]
  resources: ["functions"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["fnhost.dev"]
  resources: ["functions/status"]
  verbs: ["patch"]
- apiGroups: ["fnhost.dev"]
  resources: ["functions/finalizers"]
  verbs: ["update"]
- apiGroups: [""]
  resources: ["configmaps", "secrets", "services"]
  verbs: ["get", "create", "patch"]
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "create", "patch"]
- apiGroups: ["batch"]
  resources: ["cronjobs"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list"]
{{- if gt (int .Values.pool.size) 0 }}
# The pool (docs/security.md "The pool of generic pods"): its Deployment is in the deployments
# rule; a pod specialized for a function is deleted once the function's own pod is ready or it idles.
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["delete"]
{{- end }}
# Code GC keeps the digests a function Deployment's ReplicaSets still run (rolling updates).
- apiGroups: ["apps"]
  resources: ["replicasets"]
  verbs: ["list"]
# The NetworkPolicy of the function pods in each namespace that has Functions.
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["get", "create", "patch"]
# Events on Functions (Created, Scaled, ...: kubectl describe fn).
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create"]
{{- end -}}

{{/* The Secrets the gateway (all three) and the operator (token key, MongoDB URL) read, as files
in one read-only volume: never in the environment (docs/install.md, Secrets as files). */}}
{{- define "fnhost.secretsMountPath" -}}/var/run/secrets/fnhost{{- end -}}

{{- define "fnhost.secretsVolume" -}}
- name: secrets
  projected:
    defaultMode: 0440
    sources:
      {{- if .admin }}
      - secret: { name: {{ include "fnhost.adminSecret" .ctx }}, items: [{ key: token, path: admin-token }] }
      {{- end }}
      - secret: { name: {{ include "fnhost.tokenKeySecret" .ctx }}, items: [{ key: token-key, path: token-key }] }
      - secret: { name: {{ include "fnhost.mongodbSecret" .ctx }}, items: [{ key: url, path: mongodb-url }] }
      {{- if .ctx.Values.metrics.auth.enabled }}
      - secret: { name: {{ include "fnhost.metricsSecret" .ctx }}, items: [{ key: token, path: metrics-token }] }
      {{- end }}
{{- end -}}

{{/* /metrics: its bearer token as a file (metrics.auth), and the scrape annotations of the pods. */}}
{{- define "fnhost.metricsEnv" -}}
{{- if .Values.metrics.auth.enabled }}
- { name: FNHOST_METRICS_TOKEN_FILE, value: {{ include "fnhost.secretsMountPath" . }}/metrics-token }
{{- end }}
{{- end -}}

{{- define "fnhost.scrapeAnnotations" -}}
{{- if .ctx.Values.metrics.scrapeAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end -}}

{{/* Checks of the policy scanner (checkov, run by `make test`: charts/scan.sh) that the
platform's Deployments decide against, each with its reason (docs/install.md, Security posture). */}}
{{- define "fnhost.platformScanSkips" -}}
checkov.io/skip1: CKV_K8S_38=the gateway and the operator talk to the API server with their service account token (RBAC limited to what each needs)
{{- if not .Values.image.digest }}
checkov.io/skip2: CKV_K8S_43=the image is named by tag unless image.digest is set; the test cluster's locally built images have no registry digest
{{- end }}
checkov.io/skip3: CKV_K8S_15=image.pullPolicy is a value (IfNotPresent by default, Never for local test images); pin image.digest or set Always
{{- end -}}

{{/* ipBlock peers of a list of CIDRs; any address (IPv4 and IPv6) when the list is empty. */}}
{{- define "fnhost.ipBlocks" -}}
{{- if . }}
{{- range . }}
- ipBlock: { cidr: {{ . | quote }} }
{{- end }}
{{- else }}
- ipBlock: { cidr: 0.0.0.0/0 }
- ipBlock: { cidr: "::/0" }
{{- end }}
{{- end -}}

{{/* Egress both platform pods need: cluster DNS, the API server, MongoDB (platformNetworkPolicy in values.yaml). */}}
{{- define "fnhost.platformEgress" -}}
{{- $np := .Values.platformNetworkPolicy -}}
# Cluster DNS.
- to:
    {{- if $np.dns.cidrs }}
    {{- include "fnhost.ipBlocks" $np.dns.cidrs | trim | nindent 4 }}
    {{- else }}
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: kube-system
    {{- end }}
  ports:
    - { port: 53, protocol: UDP }
    - { port: 53, protocol: TCP }
# The API server.
- to:
    {{- include "fnhost.ipBlocks" $np.apiServer.cidrs | trim | nindent 4 }}
  ports:
    {{- range $np.apiServer.ports }}
    - { port: {{ . }}, protocol: TCP }
    {{- end }}
# MongoDB: logs, counters, KV, network policies (the operator: a deleted Function's logs).
{{- if .Values.mongodb.internal.enabled }}
- to:
    - podSelector:
        matchLabels:
          {{- include "fnhost.selectorLabels" (dict "ctx" . "component" "mongodb") | nindent 10 }}
  ports:
    - { port: 27017, protocol: TCP }
{{- else }}
- to:
    {{- include "fnhost.ipBlocks" $np.mongodb.cidrs | trim | nindent 4 }}
  ports:
    {{- range $np.mongodb.ports }}
    - { port: {{ . }}, protocol: TCP }
    {{- end }}
{{- end }}
{{- end -}}

{{/* The evaluation MongoDB's volume needs a StorageClass: without a default one (and no
storageClassName) its claim stays Pending, the gateway and operator wait for a MongoDB that
never starts, and helm says only "timed out". Checked against the cluster at install and
upgrade (lookup; helm template and --dry-run=client see no cluster and skip it). */}}
{{- define "fnhost.mongodb.checkStorageClass" -}}
{{- $internal := .Values.mongodb.internal -}}
{{- if and $internal.persistence.enabled (lookup "v1" "Namespace" "" "kube-system") -}}
{{- $classes := (lookup "storage.k8s.io/v1" "StorageClass" "" "").items | default list -}}
{{- $names := list -}}
{{- $default := "" -}}
{{- range $classes -}}
{{- $names = append $names .metadata.name -}}
{{- $annotations := .metadata.annotations | default dict -}}
{{- if or (eq (index $annotations "storageclass.kubernetes.io/is-default-class" | default "") "true") (eq (index $annotations "storageclass.beta.kubernetes.io/is-default-class" | default "") "true") -}}
{{- $default = .metadata.name -}}
{{- end -}}
{{- end -}}
{{- $available := ternary (printf "the cluster has: %s" (join ", " $names)) "the cluster has none" (gt (len $names) 0) -}}
{{- if $internal.storageClassName -}}
{{- if not (has $internal.storageClassName $names) -}}
{{- fail (printf "mongodb.internal.storageClassName=%s: no such StorageClass (%s; kubectl get storageclass). Name one, or set mongodb.internal.persistence.enabled=false for a try-out whose data goes with the pod" $internal.storageClassName $available) -}}
{{- end -}}
{{- else if not $default -}}
{{- fail (printf "mongodb.internal.enabled=true needs a StorageClass for its volume, and the cluster has no default StorageClass (%s; kubectl get storageclass): its PersistentVolumeClaim would stay Pending. Set mongodb.internal.storageClassName, or mongodb.internal.persistence.enabled=false for a try-out whose data goes with the pod" $available) -}}
{{- end -}}
{{- end -}}
{{- end -}}
