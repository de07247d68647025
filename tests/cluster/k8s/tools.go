//go:build tools

// Package tools pins the main packages that ../build-binaries.sh builds, so
// that `go mod tidy` keeps every module they need in go.mod and go.sum: the
// control plane, the node the real-node scenarios run (kubelet,
// kube-proxy, kube-scheduler), and Kubernetes' DRA test driver, the node's
// kubelet plugin in the DRA scenario.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/test/e2e/dra/test-driver"
)
