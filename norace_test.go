//go:build !race

package warden_test

const raceEnabled = false
