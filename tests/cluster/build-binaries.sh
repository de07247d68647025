#!/usr/bin/env bash
# Builds the control plane for the cluster tests (etcd, kube-apiserver,
# kube-controller-manager), the node of the real-node scenarios (kubelet,
# kube-proxy, kube-scheduler) and its DRA kubelet plugin (Kubernetes' own test
# driver, test/e2e/dra/test-driver, as dra-test-driver) from the Go module in
# tests/cluster/k8s, with the machine's Go toolchain, into a cache directory
# outside the repository:
#
#   ${GPUHOOKS_K8S_BIN:-$HOME/.cache/gpuhooks/k8s-<kubernetes version>}
#
# A stamp file in that directory records a hash of the module (go.mod, go.sum,
# tools.go), of this script and of build-cache.sh (the cache steps it shares
# with build-helm.sh); when all seven binaries are there and the stamp
# matches, nothing is built. Progress goes to stderr; the last line on
# stdout is the directory that holds the binaries.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module="$here/k8s"
tool=build-binaries
programs=(etcd kube-apiserver kube-controller-manager kubelet kube-proxy kube-scheduler dra-test-driver)
# shellcheck source=build-cache.sh
source "$here/build-cache.sh"

# The Kubernetes version is the one the module requires; the staging modules
# are replaced with the matching v0.x.y release in go.mod.
kube_version="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ { print $2; exit }' "$module/go.mod")"
if [[ -z $kube_version ]]; then
  log "cannot read the k8s.io/kubernetes version from $module/go.mod"
  exit 1
fi

cache="${GPUHOOKS_K8S_BIN:-$HOME/.cache/gpuhooks/k8s-$kube_version}"
cache="${cache%/}"
result="$cache"
stamp="$(cache_stamp "$module/go.mod" "$module/go.sum" "$module/tools.go" "${BASH_SOURCE[0]}")"
cache_reuse_or_start "the cluster tests build Kubernetes from source with it"

kube_minor="${kube_version#v1.}"
kube_minor="${kube_minor%%.*}"
build_date="$(cd "$module" && go list -m -f '{{if .Time}}{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' k8s.io/kubernetes)"
build_date="${build_date:-1970-01-01T00:00:00Z}"

# The variables that `kube-apiserver --version` and the API server's /version
# report, as hack/lib/version.sh sets them in a release build.
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X '$pkg.gitVersion=$kube_version'"
  ldflags+=" -X '$pkg.gitMajor=1'"
  ldflags+=" -X '$pkg.gitMinor=$kube_minor'"
  ldflags+=" -X '$pkg.gitTreeState=clean'"
  ldflags+=" -X '$pkg.buildDate=$build_date'"
done

log "building Kubernetes $kube_version and etcd into $cache ($(go version))"
# One `go build` for the seven programs, so that the packages they share
# (client libraries, gRPC, protobuf, the API types) are compiled once. The etcd server's main
# package is the root of go.etcd.io/etcd/server/v3, which go names "server"; the DRA test
# driver's is test/e2e/dra/test-driver, which go names "test-driver".
(
  cd "$module"
  CGO_ENABLED=0 go build \
    -p 2 \
    -trimpath \
    -buildvcs=false \
    -tags selinux,notest,grpcnotrace \
    -ldflags "$ldflags" \
    -o "$out/" \
    go.etcd.io/etcd/server/v3 \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kubelet \
    k8s.io/kubernetes/cmd/kube-proxy \
    k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/test/e2e/dra/test-driver
)
mv "$out/server" "$out/etcd"
mv "$out/test-driver" "$out/dra-test-driver"
cache_install
