#!/usr/bin/env bash
# Builds Helm from its Go module with the machine's Go toolchain into a cache
# directory outside the repository, as build-binaries.sh does for the control
# plane:
#
#   ${GPUHOOKS_HELM_BIN:-$HOME/.cache/gpuhooks/helm-<version>}/helm
#
# When the binary is there and reports the pinned version, nothing is built.
# Progress goes to stderr; the last line on stdout is the path of the binary.
set -euo pipefail

version="v3.22.0"
dir="${GPUHOOKS_HELM_BIN:-$HOME/.cache/gpuhooks/helm-$version}"
dir="${dir%/}"
helm="$dir/helm"

log() { printf 'build-helm: %s\n' "$*" >&2; }

stamp_file="$dir/.stamp"
stamp="$(sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1)"

up_to_date() {
  [[ -x $helm && -f $stamp_file && "$(cat "$stamp_file")" == "$stamp" ]]
}

if up_to_date; then
  echo "$helm"
  exit 0
fi

# One build at a time per cache directory: a second caller waits, then finds it fresh.
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9
if up_to_date; then
  echo "$helm"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  log "go is not on PATH (the chart tests build Helm from source with it)"
  exit 1
fi

out="$(mktemp -d "$dir.build.XXXXXX")"
trap 'rm -rf "$out"' EXIT
log "building Helm $version into $dir ($(go version))"
started=$SECONDS
# The variables Helm's Makefile sets and `go install` of a module version does
# not: the version `helm version` prints, and the Kubernetes version that
# `helm template` and `helm lint` assume without a cluster (that of the
# client-go Helm is built with, v0.37 -> 1.37).
kube_minor=37
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$kube_minor"
done
GOBIN="$out" CGO_ENABLED=0 go install \
  -trimpath \
  -ldflags "$ldflags" \
  "helm.sh/helm/v3/cmd/helm@$version"
mkdir -p "$dir"
mv -f "$out/helm" "$helm"
echo "$stamp" >"$stamp_file"
log "built helm in $((SECONDS - started))s"
echo "$helm"
