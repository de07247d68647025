#!/usr/bin/env bash
# Builds the Prometheus server (cmd/prometheus) from the github.com/prometheus/prometheus Go
# module with the machine's Go toolchain into a cache directory outside the repository, as
# build-promtool.sh does for promtool:
#
#   ${GPUHOOKS_PROMETHEUS_BIN:-$HOME/.cache/gpuhooks/prometheus-<version>}/prometheus
#
# The real-node lifecycle test runs it: it scrapes a stand-in HAMi exporter, evaluates the
# project's recording rules, and answers the workload agent's activity query. Built without the
# builtinassets tag (the web UI's compiled assets are not in the module; the HTTP API needs none)
# and with remove_all_sd (the test scrapes a static target; no service-discovery plugin is used).
#
# A stamp file in that directory records a hash of this script (which pins the version and the
# build flags) and of build-cache.sh; when the binary is there and the stamp matches, nothing is
# built. Progress goes to stderr; the last line on stdout is the path of the binary.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The Go module version v0.316.0 is Prometheus 3.16.0 (the module's VERSION file), the same
# release as promtool.
module_version="v0.316.0"
version="3.16.0"
tool=build-prometheus
programs=(prometheus)
# shellcheck source=build-cache.sh
source "$here/build-cache.sh"

cache="${GPUHOOKS_PROMETHEUS_BIN:-$HOME/.cache/gpuhooks/prometheus-v$version}"
cache="${cache%/}"
result="$cache/prometheus"
stamp="$(cache_stamp "${BASH_SOURCE[0]}")"
cache_reuse_or_start "the lifecycle test builds Prometheus from source with it"

log "building prometheus $version (module $module_version) into $cache ($(go version))"
pkg=github.com/prometheus/common/version
ldflags="-s -w -X $pkg.Version=$version"
GOBIN="$out" CGO_ENABLED=0 go install \
  -p 2 \
  -trimpath \
  -tags remove_all_sd \
  -ldflags "$ldflags" \
  "github.com/prometheus/prometheus/cmd/prometheus@$module_version"
cache_install
