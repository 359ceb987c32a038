package contract

import (
	"hash/fnv"
	"strconv"
)

// maxLabelValue is the longest value a label may have.
const maxLabelValue = 63

// LabelValue turns a name into a valid label value. A name that fits is
// kept as it is; a longer one keeps as much of its start as fits before a
// dash and a hash of the whole name, so that the value stays valid (it ends
// in an alphanumeric character, whatever character the cut falls on) and
// two long names that share a prefix still differ. Owners are found by UID;
// the name labels are for people and selectors.
func LabelValue(s string) string {
	if len(s) <= maxLabelValue {
		return s
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	suffix := "-" + strconv.FormatUint(uint64(h.Sum32()), 36)
	return s[:maxLabelValue-len(suffix)] + suffix
}
