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
