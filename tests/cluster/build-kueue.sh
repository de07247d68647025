#!/usr/bin/env bash
# Builds the Kueue manager (cmd/kueue of sigs.k8s.io/kueue: its controllers and
# its webhooks, the Pod integration among them) from the Go module in
# tests/kueue, with the machine's Go toolchain, into a cache directory outside
# the repository, as build-clusterapi.sh does for Cluster API:
#
#   ${GPUHOOKS_KUEUE_BIN:-$HOME/.cache/gpuhooks/kueue-<version>}/kueue-manager
#
# A stamp file in that directory records a hash of the module (go.mod, go.sum,
# tools.go), of this script and of build-cache.sh; when the binary is there and
# the stamp matches, nothing is built. The CRDs and webhook configurations are
# not copied: the scenarios read them from the module in Go's module cache
# (support/kueue.ts).
# Progress goes to stderr; the last line on stdout is the path of the binary.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module="$here/../kueue"
tool=build-kueue
programs=(kueue-manager)
# shellcheck source=build-cache.sh
source "$here/build-cache.sh"

# The version the module requires, on a `require` line of its own or in a block.
version="$(sed -nE 's|^(require)?[[:space:]]*sigs\.k8s\.io/kueue (v[^[:space:]]+).*|\2|p' "$module/go.mod" | head -n 1)"
[[ -n $version ]] || { log "cannot read the sigs.k8s.io/kueue version from $module/go.mod"; exit 1; }

cache="${GPUHOOKS_KUEUE_BIN:-$HOME/.cache/gpuhooks/kueue-$version}"
cache="${cache%/}"
result="$cache/kueue-manager"
stamp="$(cache_stamp "$module/go.mod" "$module/go.sum" "$module/tools.go" "${BASH_SOURCE[0]}")"
cache_reuse_or_start "the quota and queueing scenarios build Kueue from source with it"

log "building Kueue $version (manager) into $cache ($(go version))"
(
  cd "$module"
  CGO_ENABLED=0 go build \
    -p 2 \
    -trimpath \
    -buildvcs=false \
    -ldflags "-s -w -X 'sigs.k8s.io/kueue/pkg/version.GitVersion=$version'" \
    -o "$out/kueue-manager" \
    sigs.k8s.io/kueue/cmd/kueue
)
cache_install
