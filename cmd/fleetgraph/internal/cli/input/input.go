package input

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DefaultMaxBytes is the default of Options.MaxBytes: far above any
// ResourceGraphDefinition an API server stores (etcd takes objects of
// about 1.5 MiB), and far below what a command can hold in memory while it
// parses.
const DefaultMaxBytes = 16 << 20

// StdinName is the name standard input is given on the command line and
// in messages.
const StdinName = "-"

// Options say how much to read and where from.
type Options struct {
	// MaxBytes is the most bytes read from one file, or from standard
	// input; a larger one is an error wrapping ErrTooLarge. Defaults to
	// DefaultMaxBytes.
	MaxBytes int64
	// FollowSymlinks follows the symbolic links found in a directory
	// whose target lies outside the directory given. Links that stay
	// inside it are always followed, and a link named on the command line
	// is read like the file it names. The target must be a regular file
	// either way. Defaults to false: a link that leaves the tree is an
	// error wrapping ErrOutsideTree.
	FollowSymlinks bool
	// Stdin is what StdinName reads. Defaults to os.Stdin.
	Stdin io.Reader
}

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Stdin == nil {
		o.Stdin = os.Stdin
	}
	return o
}

// The errors of what is refused; match them with errors.Is.
var (
	// ErrTooLarge: a file or standard input holds more than MaxBytes.
	ErrTooLarge = errors.New("larger than the limit")
	// ErrNotRegular: a device, a FIFO, a socket, not a file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrOutsideTree: a symbolic link in a directory leads out of it.
	ErrOutsideTree = errors.New("a symbolic link out of the directory given")
)

// Walk calls fn with the name (as given, or under the directory given)
// and the content of each file paths name: StdinName is standard input, a
// file is read whatever its name, and a directory gives its files whose
// names match says are wanted, recursively, in lexical order. It stops at
// the first error, fn's or its own.
func Walk(o Options, paths []string, match func(name string) bool, fn func(name string, data []byte) error) error {
	o = o.withDefaults()
	for _, root := range paths {
		if root == StdinName {
			data, err := readBounded(o.Stdin, o.MaxBytes, -1)
			if err != nil {
				return fmt.Errorf("standard input: %w", err)
			}
			if err := fn(StdinName, data); err != nil {
				return err
			}
			continue
		}
		if err := walkRoot(o, root, match, fn); err != nil {
			return err
		}
	}
	return nil
}

// walkRoot reads one path given on the command line.
func walkRoot(o Options, root string, match func(string) bool, fn func(string, []byte) error) error {
	info, err := os.Stat(root) // a link named on the command line is followed
	if err != nil {
		return err
	}
	if !info.IsDir() {
		data, err := ReadFile(root, o.MaxBytes)
		if err != nil {
			return err
		}
		return fn(root, data)
	}
	tree, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	start := root
	if !strings.HasSuffix(start, string(filepath.Separator)) {
		start += string(filepath.Separator) // so that a root that is a link to a directory is walked
	}
	return filepath.WalkDir(start, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() || !match(path):
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			return readLink(o, tree, path, fn)
		}
		data, err := ReadFile(path, o.MaxBytes)
		if err != nil {
			return err
		}
		return fn(path, data)
	})
}

// readLink reads the file a symbolic link in the tree leads to, if it may.
func readLink(o Options, tree, path string, fn func(string, []byte) error) error {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	info, err := os.Stat(target)
	if err != nil {
		return err
	}
	if info.IsDir() {
		return nil // a link to a directory is not descended, as WalkDir does not
	}
	if !o.FollowSymlinks && !within(tree, target) {
		return fmt.Errorf("%s: %w (it leads to %s)", path, ErrOutsideTree, target)
	}
	data, err := ReadFile(path, o.MaxBytes)
	if err != nil {
		return err
	}
	return fn(path, data)
}

// within reports whether path lies in the directory tree.
func within(tree, path string) bool {
	rel, err := filepath.Rel(tree, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// ReadFile reads the regular file at path (a symbolic link is followed),
// at most limit bytes of it: a device, FIFO or socket is refused without
// being opened, and a larger file without being read.
func ReadFile(path string, limit int64) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(path, info, limit); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Checked again on what was opened: the path may have changed since.
	if info, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regular(path, info, limit); err != nil {
		return nil, err
	}
	data, err := readBounded(f, limit, info.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

// regular refuses what is not a regular file of at most limit bytes.
func regular(path string, info fs.FileInfo, limit int64) error {
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, kind(info.Mode()))
	}
	if info.Size() > limit {
		return fmt.Errorf("%s: %s, %w of %s", path, Size(info.Size()), ErrTooLarge, Size(limit))
	}
	return nil
}

// readBounded reads r to its end, failing once it gives more than limit
// bytes; size, when known (>= 0), sizes the buffer.
func readBounded(r io.Reader, limit, size int64) ([]byte, error) {
	var b bytes.Buffer
	if size >= 0 {
		b.Grow(int(min(size, limit)) + bytes.MinRead)
	}
	n, err := b.ReadFrom(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("more than %s: %w of %s", Size(limit), ErrTooLarge, Size(limit))
	}
	return b.Bytes(), nil
}

// kind names a mode that is not a regular file's.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}

// Size writes n bytes for people: 16 MiB, 1.5 MiB, 300 KiB, 12 bytes.
func Size(n int64) string {
	for _, u := range []struct {
		unit string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size {
			if n%u.size == 0 {
				return fmt.Sprintf("%d %s", n/u.size, u.unit)
			}
			return fmt.Sprintf("%.1f %s", float64(n)/float64(u.size), u.unit)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
