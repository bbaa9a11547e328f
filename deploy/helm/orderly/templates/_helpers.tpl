{{/* Chart name, truncated to what a label takes. */}}
{{- define "orderly.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: release and chart, once when the release already names it. */}}
{{- define "orderly.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "orderly.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "orderly.selectorLabels" -}}
app.kubernetes.io/name: {{ include "orderly.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "orderly.labels" -}}
helm.sh/chart: {{ include "orderly.chart" . }}
{{ include "orderly.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "orderly.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "orderly.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret holding the tokens and the gossip key. */}}
{{- define "orderly.authSecret" -}}
{{- default (printf "%s-auth" (include "orderly.fullname" .)) .Values.auth.existingSecret }}
{{- end }}

{{/* The Secret holding the Redis URL, and its key. */}}
{{- define "orderly.redisSecret" -}}
{{- default (printf "%s-redis" (include "orderly.fullname" .)) .Values.redis.existingSecret }}
{{- end }}
{{- define "orderly.redisSecretKey" -}}
{{- if .Values.redis.existingSecret }}{{ .Values.redis.existingSecretKey }}{{ else }}redis-url{{ end }}
{{- end }}

{{/* The headless Service of gossip. */}}
{{- define "orderly.gossipService" -}}
{{- printf "%s-gossip" (include "orderly.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* --join: the headless Service's DNS name unless gossip.join says otherwise. */}}
{{- define "orderly.join" -}}
{{- if .Values.gossip.join }}{{ .Values.gossip.join }}{{ else }}{{ printf "%s.%s.svc.cluster.local:%d" (include "orderly.gossipService" .) .Release.Namespace (int .Values.gossip.port) }}{{ end }}
{{- end }}

{{- define "orderly.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
