//go:build tools

// Package tools pins the main packages that ../build-binaries.sh builds, so
// that `go mod tidy` keeps every module they need in go.mod and go.sum: the
// control plane, and the node the real-node scenarios run (kubelet,
// kube-proxy, kube-scheduler).
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
