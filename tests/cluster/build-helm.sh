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

up_to_date() {
  [[ -x $helm ]] && "$helm" version --template '{{.Version}}' 2>/dev/null | grep -qx "$version"
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
# The version variable is what `helm version` prints; `go install` of a module
# version does not set it (Helm's Makefile does).
GOBIN="$out" CGO_ENABLED=0 go install \
  -trimpath \
  -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$version" \
  "helm.sh/helm/v3/cmd/helm@$version"
mkdir -p "$dir"
mv -f "$out/helm" "$helm"
log "built helm in $((SECONDS - started))s"
echo "$helm"
