// Package tomlfile decodes sessionbench's TOML files (config.toml, agent files, themes) from
// bytes and reports every problem with its file, line and key. It is a leaf: it reads no
// files and imports nothing of ours, so the engine (core/workflow) and the edges can share it.
package tomlfile

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/sessionbench/sessionbench/core/limits"
)

// FileError is one problem in one of sessionbench's TOML files (config.toml, an agent
// file): where it is (file, line, key) and what is wrong.
type FileError struct {
	File string
	Line int    // 1-based; 0 when unknown
	Key  string // as DisplayKey writes it, e.g. "providers[2].base_url"; "" for the whole file
	Msg  string
}

func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	if e.Key != "" {
		b.WriteString(": " + e.Key)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// FileErrors are all the problems found in one file, in line order.
type FileErrors []*FileError

func (es FileErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Sort orders the problems by line (stable, so problems on one line keep their order).
func (es FileErrors) Sort() {
	sort.SliceStable(es, func(i, j int) bool { return es[i].Line < es[j].Line })
}

// TOML is a decoded TOML file with the positions of its keys, so that problems found
// after decoding (an unknown provider, a bad URL) still say where they are.
type TOML struct {
	Path string
	Meta toml.MetaData
	*Index
}

var tomlLineErr = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)

// Decode decodes data into v. A syntax error or a value of the wrong type comes back
// as FileErrors naming the line and key; path names the file in every message.
func Decode(path string, data []byte, v any) (*TOML, error) {
	if err := checkInput(path, data); err != nil {
		return nil, err
	}
	md, err := toml.Decode(string(data), v)
	if err != nil {
		var pe toml.ParseError
		switch m := tomlLineErr.FindStringSubmatch(err.Error()); {
		case errors.As(err, &pe):
			return nil, FileErrors{{File: path, Line: pe.Position.Line, Key: pe.LastKey, Msg: pe.Message}}
		case m != nil:
			line, _ := strconv.Atoi(m[1])
			return nil, FileErrors{{File: path, Line: line, Key: m[2], Msg: m[3]}}
		}
		return nil, FileErrors{{File: path, Msg: strings.TrimPrefix(err.Error(), "toml: ")}}
	}
	return &TOML{Path: path, Meta: md, Index: NewIndex(data)}, nil
}

// Errorf is a problem at key, a dotted key with 0-based array indices
// ("providers.1.base_url"); its line is the key's, or its closest written ancestor's.
func (t *TOML) Errorf(key, format string, args ...any) *FileError {
	return &FileError{File: t.Path, Line: t.Line(key), Key: DisplayKey(key), Msg: fmt.Sprintf(format, args...)}
}

// UnknownKeys reports every key in the file that decoding did not use, in line order;
// skip exempts free-form tables and hint adds the known keys to a message.
func (t *TOML) UnknownKeys(skip func(toml.Key) bool, hint func(toml.Key) string) FileErrors {
	var errs FileErrors
	for _, k := range t.Meta.Undecoded() {
		if skip != nil && skip(k) {
			continue
		}
		msg := "unknown key"
		if hint != nil {
			msg += hint(k)
		}
		errs = append(errs, &FileError{File: t.Path, Line: t.LineOfPattern(k.String()), Key: k.String(), Msg: msg})
	}
	errs.Sort()
	return errs
}

// DisplayKey turns an index key ("steps.0.steps.1.name") into the form messages show
// ("steps[1].steps[2].name": 1-based, as a reader counts tables in the file).
func DisplayKey(key string) string {
	var b strings.Builder
	for _, s := range strings.Split(key, ".") {
		if n, err := strconv.Atoi(s); err == nil {
			fmt.Fprintf(&b, "[%d]", n+1)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// MaxFileSize is the largest TOML file sessionbench reads (configuration, agent files,
// themes): far more than any of them needs.
const MaxFileSize = 4 << 20

// checkInput refuses, before decoding, a file larger than MaxFileSize or nested deeper
// than limits.Depth: tables within tables (headers and dotted keys) and arrays or inline
// tables within values, counted together. The TOML decoder and what reads its result
// recurse once per level, and a few megabytes of nesting would take gigabytes.
func checkInput(path string, data []byte) error {
	if len(data) > MaxFileSize {
		return FileErrors{{File: path, Msg: (&limits.SizeError{What: "the file", Limit: MaxFileSize}).Error()}}
	}
	var sc valueScanner
	base, table := 0, 0
	for n, line := range strings.Split(string(data), "\n") {
		if !sc.busy() {
			t := strings.TrimSpace(line)
			switch {
			case t == "" || t[0] == '#':
				continue
			case strings.HasPrefix(t, "[["):
				table = len(splitKey(headerName(t, 2))) + 1 // the array, then its table
				base, line = table, ""
			case t[0] == '[':
				table = len(splitKey(headerName(t, 1)))
				base, line = table, ""
			default:
				eq := keyEnd(t)
				if eq < 0 {
					continue
				}
				base, line = table+len(splitKey(t[:eq])), t[eq+1:]
			}
			sc.deepest = 0
		}
		sc.scan(line)
		if base+sc.deepest > limits.Depth {
			return FileErrors{{File: path, Line: n + 1, Msg: fmt.Sprintf("nested deeper than %d levels (tables, arrays and inline tables together; the limit for any input)", limits.Depth)}}
		}
	}
	return nil
}
