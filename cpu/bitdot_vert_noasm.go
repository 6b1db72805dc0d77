//go:build !amd64 || purego

package cpu

// markLoopAVX2 is nil without assembly (see bitdot_vert_amd64.go).
var markLoopAVX2 markFunc
