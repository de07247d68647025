#!/usr/bin/env bash
# Builds Helm from its Go module with the machine's Go toolchain into a cache
# directory outside the repository, as build-binaries.sh does for the control
# plane:
#
#   ${GPUHOOKS_HELM_BIN:-$HOME/.cache/gpuhooks/helm-<version>}/helm
#
# A stamp file in that directory records a hash of this script (which pins the
# version and the build flags) and of build-cache.sh; when the binary is there
# and the stamp matches, nothing is built.
# Progress goes to stderr; the last line on stdout is the path of the binary.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="v3.22.0"
tool=build-helm
programs=(helm)
# shellcheck source=build-cache.sh
source "$here/build-cache.sh"

cache="${GPUHOOKS_HELM_BIN:-$HOME/.cache/gpuhooks/helm-$version}"
cache="${cache%/}"
result="$cache/helm"
stamp="$(cache_stamp "${BASH_SOURCE[0]}")"
cache_reuse_or_start "the chart tests build Helm from source with it"

log "building Helm $version into $cache ($(go version))"
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
cache_install
