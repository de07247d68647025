#!/usr/bin/env bash
# Builds the Cluster API core manager (the Cluster, Machine, MachineSet, ...
# controllers of sigs.k8s.io/cluster-api) from the Go module in
# tests/clusterapi, with the machine's Go toolchain, into a cache directory
# outside the repository, as build-binaries.sh does for the control plane:
#
#   ${GPUHOOKS_CAPI_BIN:-$HOME/.cache/gpuhooks/clusterapi-<version>}/cluster-api-manager
#
# A stamp file in that directory records a hash of the module (go.mod, go.sum,
# tools.go), of this script and of build-cache.sh; when the binary is there and
# the stamp matches, nothing is built. The CRDs are not copied: the scenarios
# read them from the module in Go's module cache (support/clusterapi.ts).
# Progress goes to stderr; the last line on stdout is the path of the binary.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module="$here/../clusterapi"
tool=build-clusterapi
programs=(cluster-api-manager)
# shellcheck source=build-cache.sh
source "$here/build-cache.sh"

# The version the module requires, on a `require` line of its own or in a block.
version="$(sed -nE 's|^(require)?[[:space:]]*sigs\.k8s\.io/cluster-api (v[^[:space:]]+).*|\2|p' "$module/go.mod" | head -n 1)"
[[ -n $version ]] || { log "cannot read the sigs.k8s.io/cluster-api version from $module/go.mod"; exit 1; }

cache="${GPUHOOKS_CAPI_BIN:-$HOME/.cache/gpuhooks/clusterapi-$version}"
cache="${cache%/}"
result="$cache/cluster-api-manager"
stamp="$(cache_stamp "$module/go.mod" "$module/go.sum" "$module/tools.go" "${BASH_SOURCE[0]}")"
cache_reuse_or_start "the Cluster API scenarios build Cluster API from source with it"

# The variables that the manager logs as its version, as the project's release
# build sets them (gitMajor and gitMinor are the version's first two numbers).
IFS=. read -r major minor _ <<<"${version#v}"
released="$(cd "$module" && go list -m -f '{{if .Time}}{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' sigs.k8s.io/cluster-api)"
pkg=sigs.k8s.io/cluster-api/version
ldflags="-s -w -X '$pkg.gitVersion=$version' -X '$pkg.gitMajor=$major' -X '$pkg.gitMinor=$minor'"
ldflags+=" -X '$pkg.gitTreeState=clean' -X '$pkg.buildDate=${released:-1970-01-01T00:00:00Z}'"

log "building Cluster API $version (core manager) into $cache ($(go version))"
(
  cd "$module"
  CGO_ENABLED=0 go build \
    -p 2 \
    -trimpath \
    -buildvcs=false \
    -ldflags "$ldflags" \
    -o "$out/cluster-api-manager" \
    sigs.k8s.io/cluster-api/core
)
cache_install
