package graph

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// randomLib is kro's deterministic "random" library: the same arguments
// always give the same value, so a reconcile never changes a generated
// name or port behind the user's back.
//
//	random.seededString(length int, seed string) string
//	random.seededInt(min int, max int, seed string) int   // in [min, max)
//
// The values equal kro v0.9.4's (pkg/cel/library/random.go), byte for byte:
// they end up in users' objects, so they are part of the wire contract.
type randomLib struct{}

func (randomLib) LibraryName() string { return "kro.random" }

func (randomLib) ProgramOptions() []cel.ProgramOption { return nil }

func (randomLib) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Function("random.seededString",
			cel.Overload("random.seededString_int_string", []*cel.Type{cel.IntType, cel.StringType}, cel.StringType,
				cel.BinaryBinding(seededString))),
		cel.Function("random.seededInt",
			cel.Overload("random.seededInt_int_int_string", []*cel.Type{cel.IntType, cel.IntType, cel.StringType}, cel.IntType,
				cel.FunctionBinding(seededInt))),
	}
}

// seedAlphabet is what seededString draws from.
const seedAlphabet = "0123456789abcdefghijklmnopqrstuvwxyz"

// seededString picks character i from the big-endian uint32 at byte
// 4*(i mod 8) of sha256(seed), modulo the alphabet. kro walks the digest
// four bytes at a time and wraps around, so characters repeat every eight.
func seededString(length, seed ref.Val) ref.Val {
	n, ok := length.(types.Int)
	if !ok {
		return types.NewErr("random.seededString length must be an integer")
	}
	s, ok := seed.(types.String)
	if !ok {
		return types.NewErr("random.seededString seed must be a string")
	}
	if n <= 0 {
		return types.NewErr("random.seededString length must be positive")
	}
	sum := sha256.Sum256([]byte(s))
	out := make([]byte, int(n))
	for i := range out {
		word := binary.BigEndian.Uint32(sum[4*(i%8):])
		out[i] = seedAlphabet[word%uint32(len(seedAlphabet))]
	}
	return types.String(out)
}

// seededInt is min + (first eight bytes of sha256(seed), big-endian) mod
// (max - min).
func seededInt(args ...ref.Val) ref.Val {
	if len(args) != 3 {
		return types.NewErr("random.seededInt requires exactly 3 arguments")
	}
	lo, ok1 := args[0].(types.Int)
	hi, ok2 := args[1].(types.Int)
	seed, ok3 := args[2].(types.String)
	if !ok1 || !ok2 || !ok3 {
		return types.NewErr("random.seededInt wants (int, int, string)")
	}
	if lo >= hi {
		return types.NewErr("random.seededInt min must be less than max")
	}
	sum := sha256.Sum256([]byte(seed))
	v := binary.BigEndian.Uint64(sum[:8])
	return types.Int(int64(lo) + int64(v%uint64(int64(hi)-int64(lo))))
}
