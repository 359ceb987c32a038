package graph

import (
	"crypto/md5" //nolint:gosec // kro offers md5 for checksums, not security
	"crypto/sha256"
	"hash/fnv"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// hashLib is kro's "hash" library: digests of a string, as bytes (encode
// them with base64.encode or string-format them).
//
//	hash.fnv64a(string) bytes   // 8 bytes
//	hash.sha256(string) bytes   // 32 bytes
//	hash.md5(string) bytes      // 16 bytes
type hashLib struct{}

func (hashLib) LibraryName() string { return "kro.hash" }

func (hashLib) ProgramOptions() []cel.ProgramOption { return nil }

func (hashLib) CompileOptions() []cel.EnvOption {
	digest := func(name string, sum func([]byte) []byte) cel.EnvOption {
		return cel.Function(name, cel.Overload(name+"_string", []*cel.Type{cel.StringType}, cel.BytesType,
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				s, ok := v.(types.String)
				if !ok {
					return types.NewErr("%s argument must be a string", name)
				}
				return types.Bytes(sum([]byte(s)))
			})))
	}
	return []cel.EnvOption{
		digest("hash.fnv64a", func(b []byte) []byte { h := fnv.New64a(); h.Write(b); return h.Sum(nil) }),
		digest("hash.sha256", func(b []byte) []byte { s := sha256.Sum256(b); return s[:] }),
		digest("hash.md5", func(b []byte) []byte { s := md5.Sum(b); return s[:] }), //nolint:gosec
	}
}
