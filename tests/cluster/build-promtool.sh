#!/usr/bin/env bash
# Builds promtool (Prometheus' rule checker and rule unit-test runner) from the
# github.com/prometheus/prometheus Go module with the machine's Go toolchain
# into a cache directory outside the repository, as build-helm.sh does for Helm:
#
#   ${GPUHOOKS_PROMTOOL_BIN:-$HOME/.cache/gpuhooks/promtool-<version>}/promtool
#
# Only cmd/promtool is built. The build tag remove_all_sd leaves out the
# service-discovery plugins that promtool registers through the module's
# plugins package (AWS, Azure, GCE, Consul, ...): the rules tests need none of
# them. promtool's own source still imports the file and Kubernetes discovery
# packages, so those stay.
#
# A stamp file in that directory records a hash of this script (which pins the
# version and the build flags) and of build-cache.sh; when the binary is there
# and the stamp matches, nothing is built.
# Progress goes to stderr; the last line on stdout is the path of the binary.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The Go module version v0.316.0 is Prometheus 3.16.0 (the module's VERSION file).
module_version="v0.316.0"
version="3.16.0"
tool=build-promtool
programs=(promtool)
# shellcheck source=build-cache.sh
source "$here/build-cache.sh"

cache="${GPUHOOKS_PROMTOOL_BIN:-$HOME/.cache/gpuhooks/promtool-v$version}"
cache="${cache%/}"
result="$cache/promtool"
stamp="$(cache_stamp "${BASH_SOURCE[0]}")"
cache_reuse_or_start "the rule tests build promtool from source with it"

log "building promtool $version (module $module_version) into $cache ($(go version))"
# The variables Prometheus' release build sets, so `promtool --version` names
# the release.
pkg=github.com/prometheus/common/version
ldflags="-s -w -X $pkg.Version=$version"
GOBIN="$out" CGO_ENABLED=0 go install \
  -p 2 \
  -trimpath \
  -tags remove_all_sd \
  -ldflags "$ldflags" \
  "github.com/prometheus/prometheus/cmd/promtool@$module_version"
cache_install
