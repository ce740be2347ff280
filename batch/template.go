package batch

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/stint-run/stint/internal/termsafe"
	"github.com/stint-run/stint/tasks"
)

// Replacement strings, GNU parallel's spelling, in Config.OutputName and
// (with Config.ArgTemplates) in Spec.Args. Each is replaced with a part
// of the input's name: its path below --in's folder (or a glob's fixed
// part), or its line of --files-from as given.
//
//	{}    the name                          sub/photo.raw.png
//	{.}   the name without its extension    sub/photo.raw
//	{/}   the base name                     photo.raw.png
//	{//}  the folder ("." if none)          sub
//	{/.}  the base name without extension   photo.raw
//	{#}   the input's sequence number, from 1 in the order listed
//
// Anything else between braces is kept as it is.

// LabelInput is the label each batch task carries with its input's path
// (absolute; escaped if it is not UTF-8 or too long for a label), shown
// by runner tasks show.
const LabelInput = "batch.input"

// expand replaces the replacement strings of tmpl for the input name
// (its {} ) with sequence number seq.
func expand(tmpl, name string, seq int) string {
	if !strings.Contains(tmpl, "{") {
		return tmpl
	}
	var b strings.Builder
	for i := 0; i < len(tmpl); {
		if tmpl[i] != '{' {
			b.WriteByte(tmpl[i])
			i++
			continue
		}
		end := strings.IndexByte(tmpl[i:], '}')
		if end < 0 {
			b.WriteString(tmpl[i:])
			break
		}
		tok := tmpl[i : i+end+1]
		switch tok {
		case "{}":
			b.WriteString(name)
		case "{.}":
			b.WriteString(noExt(name))
		case "{/}":
			b.WriteString(filepath.Base(name))
		case "{//}":
			b.WriteString(filepath.Dir(name))
		case "{/.}":
			b.WriteString(noExt(filepath.Base(name)))
		case "{#}":
			b.WriteString(strconv.Itoa(seq))
		default:
			b.WriteByte('{')
			i++
			continue
		}
		i += end + 1
	}
	return b.String()
}

// noExt is name without the extension of its last part, as parallel's
// {.}: "a/b.tar.gz" is "a/b.tar"; a part starting with its only dot
// (".profile") keeps it.
func noExt(name string) string {
	base := filepath.Base(name)
	dot := strings.LastIndexByte(base, '.')
	if dot <= 0 {
		return name
	}
	return name[:len(name)-(len(base)-dot)]
}

// defaultOutName is an input's output name without --output-name: its
// name when that is a path below Out, else its base name (an absolute
// path or one with .. in --files-from).
func defaultOutName(rel string) string {
	c := filepath.Clean(rel)
	if filepath.IsAbs(c) || c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
		return filepath.Base(c)
	}
	return c
}

// nameInputs gives each input its output name (Config.OutputName, else
// defaultOutName) and arguments (Spec.Args, expanded with
// Config.ArgTemplates), and checks that no two outputs collide.
func nameInputs(inputs []*batchInput, c Config) error {
	for _, in := range inputs {
		if c.OutputName != "" {
			if in.out = expand(c.OutputName, in.rel, in.seq); in.out != "" {
				in.out = filepath.Clean(in.out)
			}
		} else {
			in.out = defaultOutName(in.rel)
		}
		in.args = c.Spec.Args
		if c.ArgTemplates && len(c.Spec.Args) > 0 {
			in.args = make([]string, len(c.Spec.Args))
			for i, a := range c.Spec.Args {
				in.args[i] = expand(a, in.rel, in.seq)
			}
		}
	}
	if err := checkOutNames(inputs); err != nil {
		if c.OutputName != "" {
			return collisionErrorf("--output-name %s: %v", termsafe.String(c.OutputName), err)
		}
		return err
	}
	return nil
}

// inputLabel is the value of an input's LabelInput: its path, escaped if
// a label cannot hold it as it is.
func inputLabel(path string) string {
	if utf8.ValidString(path) && !strings.ContainsRune(path, 0) && len(path) <= tasks.MaxLabelValue {
		return path
	}
	s := termsafe.String(path)
	if len(s) > tasks.MaxLabelValue {
		cut := tasks.MaxLabelValue - 3
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

// String is the plan's line: input, output, arguments, tab-separated.
func (p Planned) String() string {
	return fmt.Sprintf("%s\t%s\t%s", p.Input, p.Output, strings.Join(p.Args, " "))
}
