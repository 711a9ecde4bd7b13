{{/*
Names, labels and per-track values shared by every template.
*/}}

{{/* Chart name, at most 63 characters. */}}
{{- define "poolparity.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name: the release name, plus the chart name unless the release name already contains it.
Trimmed to 50 characters so that "-stable"/"-gray"/"-redis" suffixes stay within 63.
*/}}
{{- define "poolparity.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Chart label value: name-version. */}}
{{- define "poolparity.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object besides name/instance/component: chart, version, manager, part-of, commonLabels. */}}
{{- define "poolparity.metaLabels" -}}
helm.sh/chart: {{ include "poolparity.chart" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: poolparity
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels of objects that belong to the release but to no track (ServiceAccount, ConfigMaps, rules). */}}
{{- define "poolparity.labels" -}}
{{ include "poolparity.metaLabels" . }}
app.kubernetes.io/name: {{ include "poolparity.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Selector labels of the service pods of both tracks (the split Service uses exactly these). */}}
{{- define "poolparity.selectorLabels" -}}
app.kubernetes.io/name: {{ include "poolparity.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: app
{{- end }}

{{/* gray-status label value of a track: "true" for gray, "false" for stable. Argument: the track name. */}}
{{- define "poolparity.grayStatus" -}}
{{- if eq . "gray" }}true{{ else }}false{{ end }}
{{- end }}

{{/*
Selector labels of one track (Deployment selector, track Service, HPA and PDB).
Argument: dict "root" $ "track" "stable"|"gray". pool-mode is left out because selectors are immutable.
*/}}
{{- define "poolparity.trackSelectorLabels" -}}
{{ include "poolparity.selectorLabels" .root }}
poolparity.dev/track: {{ .track }}
{{- end }}

{{/* Pod labels of one track: selector labels plus gray-status and pool-mode (read by the Downward API). */}}
{{- define "poolparity.trackPodLabels" -}}
{{ include "poolparity.trackSelectorLabels" . }}
poolparity.dev/gray-status: {{ include "poolparity.grayStatus" .track | quote }}
poolparity.dev/pool-mode: {{ (index .root.Values.tracks .track).poolMode }}
{{- end }}

{{/* Name of one track's objects. Argument: dict "root" $ "track" name. */}}
{{- define "poolparity.trackName" -}}
{{- printf "%s-%s" (include "poolparity.fullname" .root) .track }}
{{- end }}

{{/*
Effective values of one track as YAML: top-level autoscaling/resources/goRuntime with the
track's own keys merged over them. Use with fromYaml. Argument: dict "root" $ "track" name.
*/}}
{{- define "poolparity.trackValues" -}}
{{- $v := .root.Values }}
{{- $t := index $v.tracks .track }}
{{- $out := dict }}
{{- $_ := set $out "autoscaling" (mergeOverwrite (deepCopy $v.autoscaling) (default dict $t.autoscaling)) }}
{{- $_ := set $out "goRuntime" (mergeOverwrite (deepCopy $v.goRuntime) (default dict $t.goRuntime)) }}
{{- $_ := set $out "resources" (default $v.resources $t.resources) }}
{{- toYaml $out }}
{{- end }}

{{/* ServiceAccount name. */}}
{{- define "poolparity.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "poolparity.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Service image reference. */}}
{{- define "poolparity.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* Name of the in-cluster Redis objects. */}}
{{- define "poolparity.redisName" -}}
{{- printf "%s-redis" (include "poolparity.fullname" .) }}
{{- end }}

{{/* Name of the in-cluster Redis's headless Service (the StatefulSet's serviceName), at most 63 characters. */}}
{{- define "poolparity.redisHeadlessName" -}}
{{- printf "%s-headless" (include "poolparity.redisName" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The Secret holding the Redis password, or empty when there is none: redis.auth.existingSecret, else,
for the in-cluster Redis, the chart's own <fullname>-redis (templates/redis.yaml). Empty with
redis.auth.enabled=false, and for an external Redis without existingSecret.
*/}}
{{- define "poolparity.redisPasswordSecret" -}}
{{- $a := .Values.redis.auth }}
{{- if $a.enabled }}
{{- if $a.existingSecret }}
{{- $a.existingSecret }}
{{- else if .Values.redis.enabled }}
{{- include "poolparity.redisName" . }}
{{- end }}
{{- end }}
{{- end }}

{{/* Key of the password in the Secret above: redis.auth.existingSecretKey, or redis-password in the chart's own. */}}
{{- define "poolparity.redisPasswordKey" -}}
{{- if .Values.redis.auth.existingSecret }}
{{- .Values.redis.auth.existingSecretKey }}
{{- else }}redis-password{{ end }}
{{- end }}

{{/* "true" when the chart creates the Redis password Secret (in-cluster Redis, auth on, no existingSecret). */}}
{{- define "poolparity.redisGeneratesSecret" -}}
{{- if and .Values.redis.enabled .Values.redis.auth.enabled (not .Values.redis.auth.existingSecret) }}true{{ end }}
{{- end }}

{{/* REDIS_ADDR: the in-cluster Redis Service, the external address, or empty (redis.embedded: each pod's own Redis). */}}
{{- define "poolparity.redisAddr" -}}
{{- if .Values.redis.enabled }}
{{- printf "%s:6379" (include "poolparity.redisName" .) }}
{{- else }}
{{- .Values.redis.externalAddress }}
{{- end }}
{{- end }}

{{/* Tracks that are enabled, as a list of names, in a fixed order. */}}
{{- define "poolparity.enabledTracks" -}}
{{- $out := list }}
{{- range $name := list "stable" "gray" }}
{{- if (index $.Values.tracks $name).enabled }}
{{- $out = append $out $name }}
{{- end }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/* "true" when the HTTPRoute splits the traffic by weight (routing.mode gatewayAPI): no split Service then. */}}
{{- define "poolparity.routedByWeight" -}}
{{- if eq .Values.routing.mode "gatewayAPI" }}true{{ end }}
{{- end }}

{{/*
parentRefs of the HTTPRoute as a YAML list: the chart's Gateway (routing.gatewayAPI.gateway.create,
on its listener), then routing.gatewayAPI.parentRefs. Fails the render when the Gateway to create
has no class, or when the route would have no parent at all (it would never be served).
*/}}
{{- define "poolparity.routeParentRefs" -}}
{{- $g := .Values.routing.gatewayAPI }}
{{- $refs := list }}
{{- if $g.gateway.create }}
{{- if not $g.gateway.gatewayClassName }}
{{- fail "routing.gatewayAPI.gateway.create=true needs routing.gatewayAPI.gateway.gatewayClassName: the GatewayClass of your Gateway controller (kubectl get gatewayclass)" }}
{{- end }}
{{- $refs = append $refs (dict "name" (include "poolparity.fullname" .) "sectionName" $g.gateway.listenerName) }}
{{- end }}
{{- $refs = concat $refs $g.parentRefs }}
{{- if not $refs }}
{{- fail "routing.mode=gatewayAPI needs a Gateway for the HTTPRoute: set routing.gatewayAPI.parentRefs to your Gateway (e.g. [{name: public, namespace: gateways}]), or routing.gatewayAPI.gateway.create=true with a gatewayClassName" }}
{{- end }}
{{- toYaml $refs }}
{{- end }}

{{/*
terminationGracePeriodSeconds of the service pods: shutdown.terminationGracePeriodSeconds, or (0) preStop
sleep + SHUTDOWN_DELAY + SHUTDOWN_TIMEOUT + graceSlackSeconds. Fails the render when it is not above
preStop sleep + delay + timeout: the kubelet would SIGKILL a pod that is still draining.
*/}}
{{- define "poolparity.terminationGracePeriodSeconds" -}}
{{- $s := .Values.shutdown }}
{{- $drain := add $s.preStopSleepSeconds $s.delaySeconds $s.timeoutSeconds }}
{{- $grace := add $drain $s.graceSlackSeconds }}
{{- if $s.terminationGracePeriodSeconds }}
{{- $grace = $s.terminationGracePeriodSeconds }}
{{- end }}
{{- if le (int $grace) (int $drain) }}
{{- fail (printf "terminationGracePeriodSeconds=%d must be above shutdown.preStopSleepSeconds + delaySeconds + timeoutSeconds = %d + %d + %d = %d: the kubelet would kill pods that are still draining (raise shutdown.terminationGracePeriodSeconds or graceSlackSeconds, or lower the delay or timeout)" (int $grace) (int $s.preStopSleepSeconds) (int $s.delaySeconds) (int $s.timeoutSeconds) (int $drain)) }}
{{- end }}
{{- $grace }}
{{- end }}

{{/*
Bytes of a memory size: a Kubernetes quantity ("256Mi", "1G", "1048576") or a GOMEMLIMIT value ("230MiB",
"1024B"). Fails the render naming the field when it is neither. Argument: dict "value" v "field" "path.of.value".
*/}}
{{- define "poolparity.bytes" -}}
{{- $v := toString .value }}
{{- if not (regexMatch "^[0-9]+(B|KiB|MiB|GiB|TiB|Ki|Mi|Gi|Ti|k|M|G|T)?$" $v) }}
{{- fail (printf "%s=%q: want a whole number of bytes with an optional unit (Ki, Mi, Gi, Ti, k, M, G, T, or B, KiB, MiB, GiB, TiB)" .field $v) }}
{{- end }}
{{- $units := dict "" 1 "B" 1 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "Ki" 1024 "KiB" 1024 "Mi" 1048576 "MiB" 1048576 "Gi" 1073741824 "GiB" 1073741824 "Ti" 1099511627776 "TiB" 1099511627776 }}
{{- $n := regexReplaceAll "[^0-9].*$" $v "" }}
{{- $unit := regexReplaceAll "^[0-9]+" $v "" }}
{{- printf "%d" (mul (int64 $n) (int64 (index $units $unit))) }}
{{- end }}

{{/*
GOMEMLIMIT of one track's service container, or empty for none: goRuntime.gomemlimit when set, else
goRuntime.gomemlimitFraction of the track's memory limit, in bytes. Fails the render when the fraction has no memory
limit to apply to, or when the limit is below goRuntime.liveHeapFloor (the GC would run back to back) or above the
container's memory limit (the kernel would kill the pod before the GC reacts). Argument: dict "track" name "tv" the
track's effective values (poolparity.trackValues).
*/}}
{{- define "poolparity.gomemlimit" -}}
{{- $g := .tv.goRuntime }}
{{- $field := printf "tracks.%s.goRuntime" .track }}
{{- $mem := "" }}
{{- with .tv.resources }}{{ with .limits }}{{ with .memory }}{{ $mem = toString . }}{{ end }}{{ end }}{{ end }}
{{- $memBytes := 0 }}
{{- if $mem }}
{{- $memBytes = include "poolparity.bytes" (dict "value" $mem "field" (printf "tracks.%s.resources.limits.memory" .track)) | int64 }}
{{- end }}
{{- $limit := "" }}
{{- if $g.gomemlimit }}
{{- $limit = $g.gomemlimit }}
{{- else if and $g.gomemlimitFraction (gt (float64 $g.gomemlimitFraction) 0.0) }}
{{- if not $mem }}
{{- fail (printf "%s.gomemlimitFraction=%v needs a memory limit (resources.limits.memory) on the %s track; set one, or set gomemlimit, or gomemlimitFraction: 0" $field $g.gomemlimitFraction .track) }}
{{- end }}
{{- $limit = printf "%d" (int64 (floor (mulf (float64 $g.gomemlimitFraction) (float64 $memBytes)))) }}
{{- end }}
{{- if and $limit (ne $limit "off") }}
{{- $bytes := include "poolparity.bytes" (dict "value" $limit "field" (printf "%s.gomemlimit" $field)) | int64 }}
{{- $floor := include "poolparity.bytes" (dict "value" (default "0" $g.liveHeapFloor) "field" (printf "%s.liveHeapFloor" $field)) | int64 }}
{{- if lt $bytes $floor }}
{{- fail (printf "%s: GOMEMLIMIT %s (%d bytes) is below liveHeapFloor %s: the GC would run back to back; raise the limit or lower the floor to the live heap your service holds" $field $limit $bytes $g.liveHeapFloor) }}
{{- end }}
{{- if and $memBytes (gt $bytes $memBytes) }}
{{- fail (printf "%s: GOMEMLIMIT %s (%d bytes) is above the container's memory limit %s (%d bytes): the kernel would kill the pod before the GC reacts; keep it at about 90%% of the limit" $field $limit $bytes $mem $memBytes) }}
{{- end }}
{{- end }}
{{- $limit }}
{{- end }}

{{/*
The autoscaler of one track: "" (autoscaling off), "hpa" or "keda". Fails the render on an unknown mode, on
`keda` without autoscaling.keda.serverAddress, with podsMetric (KEDA makes the HPA and has no Pods trigger for
prometheus-adapter's metric), or with a window the rules do not record. Argument: dict "root" $ "track" name
"as" the track's effective autoscaling values.
*/}}
{{- define "poolparity.autoscaler" -}}
{{- $as := .as }}
{{- $mode := default "hpa" $as.mode }}
{{- $f := printf "tracks.%s.autoscaling" .track }}
{{- if not $as.enabled }}
{{- else if eq $mode "hpa" }}hpa
{{- else if eq $mode "keda" }}
{{- if not $as.keda.serverAddress }}
{{- fail (printf "%s.mode=keda needs autoscaling.keda.serverAddress: the URL of the Prometheus that records the chart's rules (e.g. http://prometheus-operated.monitoring.svc:9090)" $f) }}
{{- end }}
{{- if $as.podsMetric.enabled }}
{{- fail (printf "%s.mode=keda cannot use podsMetric (a prometheus-adapter metric of the chart's own HPA); turn it off, the latency trigger queries Prometheus itself" $f) }}
{{- end }}
{{- if not (has (toString $as.keda.window) (.root.Values.rules.windows | toStrings)) }}
{{- fail (printf "%s.keda.window %q must be one of rules.windows %v: the query reads that rule family" $f (toString $as.keda.window) .root.Values.rules.windows) }}
{{- end }}keda
{{- else }}
{{- fail (printf "%s.mode %q: want hpa or keda" $f $mode) }}
{{- end }}
{{- end }}

{{/*
The PromQL of one track's latency trigger: the parity catalog's per-track p95 query
(catalog.SLI.TrackQuery of latency-p95, internal/catalog), this release's job and namespace and the
track's gray_status. Argument: dict "root" $ "track" name "window" the rule window family.
*/}}
{{- define "poolparity.latencyQuery" -}}
{{- printf "max(job_gray_status:http_request_duration_seconds:p95_rate%s{job=%q,namespace=%q,gray_status=%q})" .window .root.Release.Name .root.Release.Namespace (include "poolparity.grayStatus" .track) }}
{{- end }}
