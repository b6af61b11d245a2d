{{/*
The names are fixed, as the shipped manifest's: the webhook configuration is one
cluster-wide object named tandem-injector (one release a cluster), and
`tandem-injector webhook` prints its Service as tandem-injector.
*/}}

{{/* The labels of every object the chart writes. */}}
{{- define "tandem-injector.labels" -}}
app.kubernetes.io/name: tandem-injector
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* An image reference from {repository, tag, digest}: the digest wins, the tag
defaults to the chart's appVersion. Call with (list $image $). */}}
{{- define "tandem-injector.image" -}}
{{- $image := index . 0 -}}
{{- $root := index . 1 -}}
{{- if $image.digest -}}
{{- printf "%s@%s" $image.repository $image.digest -}}
{{- else -}}
{{- printf "%s:%s" $image.repository ($image.tag | default $root.Chart.AppVersion) -}}
{{- end -}}
{{- end }}

{{/*
What the binary prints, as a JSON list of its objects, for this release: a file
of files/ (written by `make chart-files` from `tandem-injector webhook` and
`tandem-injector policy`, and checked by `make chart`) with the namespace it
names, tandem-system, replaced by the release's, the tandem image it names
replaced by tandemImage's, and the chart's labels added. Call with
(dict "file" "files/NAME.yaml" "root" $).
*/}}
{{- define "tandem-injector.printed" -}}
{{- $root := .root -}}
{{- $printed := printf "ghcr.io/tandem-sidecar/tandem:%s" $root.Chart.AppVersion -}}
{{- $image := include "tandem-injector.image" (list $root.Values.tandemImage $root) -}}
{{- $labels := include "tandem-injector.labels" $root | fromYaml -}}
{{- $objects := list -}}
{{- range $doc := $root.Files.Get .file | splitList "\n---\n" -}}
{{- $object := fromYaml $doc -}}
{{- if $object.kind -}}
{{- $json := toJson $object | replace "\"tandem-system\"" (toJson $root.Release.Namespace) | replace "\"tandem-system/" (printf "\"%s/" $root.Release.Namespace) | replace (printf "'%s'" $printed) (printf "'%s'" $image) -}}
{{- $object = fromJson $json -}}
{{- $_ := set $object.metadata "labels" (merge (dict) (default (dict) $object.metadata.labels) $labels) -}}
{{- $objects = append $objects $object -}}
{{- end -}}
{{- end -}}
{{- if not $objects -}}
{{- fail (printf "%s holds no object: run make chart-files" .file) -}}
{{- end -}}
{{- toJson $objects -}}
{{- end }}
