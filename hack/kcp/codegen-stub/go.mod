// A stand-in for github.com/kcp-dev/code-generator/v3, which kcp v0.30.0
// requires but cmd/kcp never imports and the Go module proxy does not serve.
module github.com/kcp-dev/code-generator/v3
