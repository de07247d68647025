#!/usr/bin/env bash
# Builds the real node's NetworkPolicy firewall, kube-router, from its Go
# module with the machine's Go toolchain into a cache directory outside the
# repository, as build-binaries.sh does for Kubernetes:
#
#   ${GPUHOOKS_NODE_TOOLS:-$HOME/.cache/gpuhooks/node-tools-<version>}/kube-router
#
# kube-router runs in firewall-only mode (iptables and ipset, which this
# kernel has; nftables' queue statement, which nfqueue-based implementations
# need, it has not). v2.1.0 is the version the module proxy serves; it has
# reported security flaws, which a test harness on loopback accepts and which
# is why nothing of it is shipped.
# A stamp file in that directory records a hash of this script and of
# build-cache.sh; when the binary is there and the stamp matches, nothing is
# built. Progress goes to stderr; the last line on stdout is the directory.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="v2.1.0"
tool=build-node-tools
programs=(kube-router)
# shellcheck source=build-cache.sh
source "$here/build-cache.sh"

cache="${GPUHOOKS_NODE_TOOLS:-$HOME/.cache/gpuhooks/node-tools-$version}"
cache="${cache%/}"
result="$cache"
stamp="$(cache_stamp "${BASH_SOURCE[0]}")"
cache_reuse_or_start "the real-node tests build kube-router from source with it"

log "building kube-router $version into $cache ($(go version))"
GOBIN="$out" CGO_ENABLED=0 go install \
  -trimpath \
  -ldflags "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$version" \
  "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@$version"
cache_install
