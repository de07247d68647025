//go:build tools

// Package tools pins the main package that ../cluster/build-clusterapi.sh
// builds, so that `go mod tidy` keeps every module it needs in go.mod and
// go.sum. Cluster API's own go.mod replaces its api module with ./api, a
// directive that does not reach a module requiring it, hence the explicit
// requirement of sigs.k8s.io/cluster-api/api at the same version.
package tools

import (
	_ "sigs.k8s.io/cluster-api/core"
)
