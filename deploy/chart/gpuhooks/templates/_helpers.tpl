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

{{/*
"true" when a switch is on: true or false force it; auto follows the cluster, on when it serves
every kind of `needs` (group/version/Kind, as discovery lists them). Called with
(dict "root" $ "field" "controllers.<name>.enabled" "value" <value> "needs" <list>).
*/}}
{{- define "gpuhooks.switch" -}}
{{- $value := toString .value -}}
{{- if eq $value "auto" -}}
{{- $served := true -}}
{{- range .needs }}{{ if not ($.root.Capabilities.APIVersions.Has .) }}{{ $served = false }}{{ end }}{{ end -}}
{{- if $served }}true{{ end -}}
{{- else if eq $value "true" -}}
true
{{- else if ne $value "false" -}}
{{- fail (printf "%s is %s; it takes true, false or auto" .field $value) -}}
{{- end -}}
{{- end -}}

{{/* The controllers as their descriptors describe them (files/controllers.yaml, written by `npm run chart`). */}}
{{- define "gpuhooks.controllers" -}}
{{- toJson (.Files.Get "files/controllers.yaml" | fromYaml).controllers -}}
{{- end -}}

{{/*
"true" when the controller named by `name` is installed: controllers.<name>.enabled (true, false,
or auto: where the cluster serves what its child types need). Called with (dict "root" $ "name" <name>).
*/}}
{{- define "gpuhooks.on" -}}
{{- $root := .root -}}
{{- $name := .name -}}
{{- range (include "gpuhooks.controllers" $root | fromJsonArray) }}
{{- if eq .name $name -}}
{{- $values := index $root.Values.controllers $name | default dict -}}
{{- include "gpuhooks.switch" (dict "root" $root "field" (printf "controllers.%s.enabled" $name) "value" (hasKey $values "enabled" | ternary $values.enabled true) "needs" .needs) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
"true" when a group of a controller's optional child types is declared: the controller on, and
controllers.<name>.<option> (true, false, or auto: where the cluster serves them). Called with
(dict "root" $ "name" <name> "option" <option>).
*/}}
{{- define "gpuhooks.optionOn" -}}
{{- $root := .root -}}
{{- $name := .name -}}
{{- $option := .option -}}
{{- if include "gpuhooks.on" (dict "root" $root "name" $name) -}}
{{- range (include "gpuhooks.controllers" $root | fromJsonArray) }}
{{- if eq .name $name -}}
{{- $values := index $root.Values.controllers $name | default dict -}}
{{- include "gpuhooks.switch" (dict "root" $root "field" (printf "controllers.%s.%s" $name $option) "value" (hasKey $values $option | ternary (index $values $option) "auto") "needs" (index .optional $option).needs) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* "true" when the GPUCellPool controller, and with it the workload agent, is installed. */}}
{{- define "gpuhooks.cellpools" -}}
{{- include "gpuhooks.on" (dict "root" . "name" "cellpool") -}}
{{- end -}}

{{/*
"true" when the agent's activity controller of Instances runs (docs/workload.md, "Instance
activity"): the Instance controller on, agent.activity.enabled true (or auto: with cell pools, or
with agent.activity.prometheusURL), and something to do (stops, or prometheusURL).
*/}}
{{- define "gpuhooks.activity" -}}
{{- $a := .Values.agent.activity -}}
{{- $work := or $a.stops $a.prometheusURL -}}
{{- $enabled := hasKey $a "enabled" | ternary $a.enabled "auto" | toString -}}
{{- if include "gpuhooks.on" (dict "root" . "name" "instance") -}}
{{- if eq $enabled "true" -}}
{{- if not $work }}{{ fail "agent.activity.enabled is true, but with agent.activity.stops false and no agent.activity.prometheusURL the activity controller has nothing to do" }}{{ end -}}
true
{{- else if eq $enabled "auto" -}}
{{- if and $work (or (include "gpuhooks.cellpools" .) $a.prometheusURL) }}true{{ end -}}
{{- else if ne $enabled "false" -}}
{{- fail (printf "agent.activity.enabled is %s; it takes true, false or auto" $enabled) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* "true" when the workload agent is installed: for cell pools, or for the activity of Instances. */}}
{{- define "gpuhooks.agent" -}}
{{- if or (include "gpuhooks.cellpools" .) (include "gpuhooks.activity" .) }}true{{ end -}}
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
