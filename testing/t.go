package testing

// TestingT is the part of *testing.T (or *testing.B, or another harness's
// equivalent) the helpers here use, so that they serve any harness.
type TestingT interface {
	Helper()
	Cleanup(func())
	Logf(format string, args ...any)
	Fatalf(format string, args ...any)
}
