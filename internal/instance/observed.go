package instance

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"io"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// The apply memory keeps, per child, the API server's answer to our last
// apply: dependents and readyWhen read it when the child is not applied
// again. Held as decoded JSON (nested maps), it was most of the hub's heap
// per instance (a Deployment's answer costs tens of KiB as maps, a few as
// JSON), so it is kept encoded and decoded when a reconcile reuses it, which
// also hands every reconcile a copy of its own.
//
// Encoded, it is compressed with DEFLATE against a dictionary per kind: the
// first answer of that kind the process encodes. Answers of one kind differ
// in little but names, UIDs and versions, so each costs a few hundred bytes
// instead of one or two KiB. A kind's dictionary never changes, so any
// answer encoded with it decodes with it.

// dictLevel is the lowest DEFLATE level that uses a dictionary (BestSpeed
// ignores it): a Deployment's answer of 1.3 KB takes about 100 bytes.
const dictLevel = 2

// answerCodec is the process's codec of apply answers.
var answerCodec = &observedCodec{kinds: map[schema.GroupVersionKind]*kindCodec{}}

// observedCodec compresses apply answers with a dictionary per kind.
type observedCodec struct {
	mu    sync.Mutex
	kinds map[schema.GroupVersionKind]*kindCodec
}

// kindCodec is one kind's dictionary, with writers made for it.
type kindCodec struct {
	dict    []byte
	writers sync.Pool // *flate.Writer with dict
}

// readers are flate readers, reset with the dictionary of each read.
var readers sync.Pool

// kind returns gvk's codec, taking sample as its dictionary if it has none.
func (c *observedCodec) kind(gvk schema.GroupVersionKind, sample []byte) *kindCodec {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.kinds[gvk]
	if k == nil && sample != nil {
		k = &kindCodec{dict: bytes.Clone(sample)}
		c.kinds[gvk] = k
	}
	return k
}

// encode is obj as compressed compact JSON; nil if it cannot be encoded
// (the child is then applied again next time).
func (c *observedCodec) encode(gvk schema.GroupVersionKind, obj map[string]any) []byte {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	k := c.kind(gvk, raw)
	var buf bytes.Buffer
	w, _ := k.writers.Get().(*flate.Writer)
	if w == nil {
		if w, err = flate.NewWriterDict(&buf, dictLevel, k.dict); err != nil {
			return nil
		}
	} else {
		w.Reset(&buf)
	}
	defer k.writers.Put(w)
	if _, err := w.Write(raw); err != nil {
		return nil
	}
	if err := w.Close(); err != nil {
		return nil
	}
	return bytes.Clone(buf.Bytes())
}

// decode undoes encode, with integers as int64 as the API machinery
// decodes them, so that CEL sees the same types as after an apply.
func (c *observedCodec) decode(gvk schema.GroupVersionKind, b []byte) (map[string]any, bool) {
	k := c.kind(gvk, nil)
	if b == nil || k == nil {
		return nil, false
	}
	src := bytes.NewReader(b)
	r, _ := readers.Get().(io.ReadCloser)
	if r == nil {
		r = flate.NewReaderDict(src, k.dict)
	} else if err := r.(flate.Resetter).Reset(src, k.dict); err != nil {
		return nil, false
	}
	defer readers.Put(r)
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, false
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return nil, false
	}
	return obj, true
}
