package testing

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// Footprint is what a process holds after a full garbage collection, for
// benchmarks that report the hub's cost per instance or per cluster.
type Footprint struct {
	// RSS is the resident set after free memory went back to the OS
	// (Linux's VmRSS).
	RSS uint64
	// HeapAlloc is the live heap; HeapInuse adds the spans it occupies.
	HeapAlloc, HeapInuse uint64
	Goroutines           int
}

// errNoRSS is returned where /proc/self/status has no VmRSS line.
var errNoRSS = errors.New("no VmRSS in /proc/self/status")

// MeasureFootprint collects garbage twice, returns free memory to the OS
// and reads the process's footprint. RSS needs Linux's /proc.
func MeasureFootprint() (Footprint, error) {
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, err := residentBytes()
	return Footprint{RSS: rss, HeapAlloc: ms.HeapAlloc, HeapInuse: ms.HeapInuse, Goroutines: runtime.NumGoroutine()}, err
}

func residentBytes() (uint64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("reading the resident set: %w", err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("reading the resident set: %w", err)
			}
			return kib << 10, nil
		}
	}
	return 0, errNoRSS
}
