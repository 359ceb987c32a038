//go:build integration && hostile && !race

package sdk_test

// raceDetector: this test binary runs without the race detector, so the
// hostile corpus asserts its RSS and latency bounds.
const raceDetector = false
