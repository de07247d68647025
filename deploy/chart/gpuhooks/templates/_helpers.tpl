{{/* The release's base name: the release name, or "gpuhooks" inside it. */}}
{{- define "gpuhooks.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gpuhooks.labels" -}}
app.kubernetes.io/name: gpuhooks
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gpuhooks
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "gpuhooks.selector" -}}
app.kubernetes.io/name: gpuhooks
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gpuhooks.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The TLS Secret of the admission listener. */}}
{{- define "gpuhooks.tlsSecret" -}}
{{ include "gpuhooks.fullname" . }}-webhook-tls
{{- end -}}

{{/* "true" when the GPUCellPool CRD is part of the chart (files/crds, copied from crds/). */}}
{{- define "gpuhooks.cellpools" -}}
{{- if .Files.Get "files/crds/gpucellpools.cells.kubeswift.io.yaml" -}}true{{- end -}}
{{- end -}}

{{/* Container security shared by every container of the chart. */}}
{{- define "gpuhooks.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "gpuhooks.podSecurity" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
fsGroup: 1000
seccompProfile:
  type: RuntimeDefault
{{- end -}}
