//go:build integration && hostile && race

package sdk_test

// raceDetector: this test binary runs under the race detector, whose
// shadow memory (several times the heap) and slowdown make the hostile
// corpus's RSS and latency bounds meaningless; its cases are still run.
const raceDetector = true
