package crdcompat

import (
	"fmt"
	"strings"
)

// maxPathLen bounds a field path in a break, as the compiler bounds its
// own paths: a tenant's deeply nested schema must not make the message
// grow without bound.
const maxPathLen = 256

// joinPath appends key to path the way the compiler writes paths: a dot
// for a key that reads as an identifier, brackets and quotes otherwise.
func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	if !isIdent(strings.ReplaceAll(key, "-", "_")) {
		return clipPath(fmt.Sprintf("%s[%q]", path, key))
	}
	return clipPath(path + "." + key)
}

func isIdent(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func clipPath(p string) string {
	if len(p) <= maxPathLen {
		return p
	}
	return strings.ToValidUTF8(p[:maxPathLen/2-1]+"…"+p[len(p)-maxPathLen/2+2:], "")
}
