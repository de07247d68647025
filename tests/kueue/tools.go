//go:build tools

// Package tools pins the main package that ../cluster/build-kueue.sh builds
// (Kueue's manager, cmd/kueue), so that `go mod tidy` keeps every module it
// needs in go.mod and go.sum.
package tools

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
