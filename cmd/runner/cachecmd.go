package main

import (
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/stint-run/stint/internal/cachenames"
)

// runner cache: what the compilation cache holds, and trimming it.

func (a *app) cacheCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Show and trim the compilation cache",
		Long: `Compiled modules are kept on disk so that a module is compiled once, not
at every run: what Stint prepared (the module checked, its stop checks
added: stint-prepared) and wazero's machine code for it (wazero-VERSION-ARCH).

One cache serves every command, so that runner run, call, batch and serve
share what any of them compiled: sandbox.cache_dir when set; else
data_dir/cache when data_dir is set (flag, env or file); else stint in the
user's cache directory ($XDG_CACHE_HOME, else ~/.cache; sandbox.user_cache=on,
the default); else data_dir/cache.

It is kept under sandbox.cache_max_bytes (2GiB by default: a working set of
a few large tools and many small ones; docs/benchmarks.md measures what
programs take there): when a command that compiles starts, the least
recently used files (by the later of their access and modification times)
are deleted until it fits; a file written in the last minute is never
deleted (a compilation may be writing it).

Each entry carries the name of the program it belongs to: the file given to
runner run, call or batch (its absolute path), or the name a task's module
was uploaded with (runner serve); runner cache list shows it (MODULE), kept
in small records (stint-names) that prune deletes with their last entry.`,
	}
	cmd.AddCommand(a.cacheListCommand(), a.cachePruneCommand())
	return cmd
}

// cacheEntryView is one file of the cache as runner cache list --json
// prints it.
type cacheEntryView struct {
	Entry        string    `json:"entry"` // relative to the cache's directory
	Kind         string    `json:"kind"`  // prepared, compiled, partial or other (cacheKind)
	Bytes        int64     `json:"bytes"`
	LastUsed     time.Time `json:"last_used"`
	Module       string    `json:"module"`                  // its module's latest name; "" unknown
	Names        []string  `json:"names,omitempty"`         // every name kept, the latest first
	ModuleSHA256 string    `json:"module_sha256,omitempty"` // its module's sha256, when the cache knows it
}

func (a *app) cacheListCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the compilation cache's entries, most recently used first",
		Long: `List the compilation cache's files, most recently used first: KIND
(prepared: Stint's checked and rewritten module; compiled: wazero's machine
code; partial: a write in flight or interrupted), SIZE, LAST USED, MODULE and
ENTRY (its file in the cache).

MODULE is the program the entry belongs to: the latest name the module was
compiled under (the file given to runner run, call or batch, as an absolute
path; the name a module was uploaded with, POST /v1/modules?name=, for a task
of runner serve); "-" when unknown (a module given on a pipe, a task's module
without a name, or an entry written before Stint recorded names).

With --json: {"dir", "bytes", "max_bytes", "entries": [...]}, each entry with
its "names" (every name kept, latest first) and "module_sha256".`,
		Example: `  runner cache list
  runner cache list --json
  runner cache list --sandbox-cache-dir /var/cache/stint`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := a.compileCacheDir(true)
			if err != nil {
				return err
			}
			if dir == "" {
				if asJSON {
					return a.printJSON(struct {
						Dir     *string          `json:"dir"`
						Entries []cacheEntryView `json:"entries"`
					}{nil, []cacheEntryView{}})
				}
				fmt.Fprintln(a.stdout, "no compilation cache: data_dir does not exist and sandbox.user_cache is off")
				return nil
			}
			views, total := cacheEntries(dir)
			max := a.cfg.Sandbox.CacheMaxBytes
			if asJSON {
				return a.printJSON(struct {
					Dir      string           `json:"dir"`
					Bytes    int64            `json:"bytes"`
					MaxBytes int64            `json:"max_bytes"` // 0: no cap
					Entries  []cacheEntryView `json:"entries"`
				}{dir, total, max, views})
			}
			fmt.Fprintf(a.stdout, "%s: %s, %s", dir, count(int64(len(views)), "entry"), humanize.IBytes(uint64(total)))
			if max > 0 {
				fmt.Fprintf(a.stdout, " of %s (sandbox.cache_max_bytes)", humanize.IBytes(uint64(max)))
			}
			fmt.Fprintln(a.stdout)
			if len(views) == 0 {
				return nil
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "KIND\tSIZE\tLAST USED\tMODULE\tENTRY")
			now := time.Now()
			for _, v := range views {
				module := "-"
				if v.Module != "" {
					module = termField(v.Module)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", v.Kind, humanize.IBytes(uint64(v.Bytes)), ago(now, v.LastUsed), module, termField(v.Entry))
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"dir", "bytes", "max_bytes", "entries": [...]} as JSON`)
	return cmd
}

// cacheEntries lists the cache at dir's files, most recently used first,
// each with its module's names (cachenames.Read), and their total
// size.
func cacheEntries(dir string) ([]cacheEntryView, int64) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return []cacheEntryView{}, 0
	}
	defer root.Close()
	files, total := cacheFiles(root)
	records := map[string]cachenames.Record{}
	for _, rec := range cachenames.Read(root.FS()) {
		for _, e := range rec.Entries {
			records[e] = rec
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].used.After(files[j].used) })
	views := make([]cacheEntryView, 0, len(files))
	for _, f := range files {
		v := cacheEntryView{Entry: f.path, Kind: cacheKind(f.path), Bytes: f.size, LastUsed: f.used}
		if rec, ok := records[f.path]; ok {
			v.ModuleSHA256, v.Names, v.Module = rec.SHA256, rec.Names, rec.Latest()
		}
		views = append(views, v)
	}
	return views, total
}

func (a *app) cachePruneCommand() *cobra.Command {
	var maxText string
	var all bool
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Delete the least recently used entries until the cache fits its cap",
		Long: `Delete the compilation cache's least recently used files until it holds at
most --max-bytes (default sandbox.cache_max_bytes), or every file with --all.
A file written in the last minute is kept (a compilation may be writing it).
What is deleted is compiled again when a module needs it.`,
		Example: `  runner cache prune
  runner cache prune --max-bytes 500MiB
  runner cache prune --all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			max := a.cfg.Sandbox.CacheMaxBytes
			switch {
			case all && maxText != "":
				return usageErrorf("--all and --max-bytes: give one")
			case all:
				max = 1 // pruneCache keeps at most 1 byte: every file it may delete
			case maxText != "":
				n, err := parseSize(maxText)
				if err != nil || n <= 0 {
					return usageErrorf("--max-bytes %q: want a size over 0, like 500MiB", maxText)
				}
				max = n
			case max <= 0:
				fmt.Fprintln(a.stdout, "sandbox.cache_max_bytes is 0 (no cap): nothing to prune; --max-bytes or --all say how much")
				return nil
			}
			dir, err := a.compileCacheDir(true)
			if err != nil || dir == "" {
				return err
			}
			freed, deleted := pruneCache(dir, max, a.log)
			if deleted == 0 { // else pruneCache swept them
				sweepCacheNamesIn(dir, a.log)
			}
			_, left := cacheFilesIn(dir)
			fmt.Fprintf(a.stdout, "%s: %s deleted (%s); %s left\n", dir, count(int64(deleted), "file"), humanize.IBytes(uint64(freed)), humanize.IBytes(uint64(left)))
			return nil
		},
	}
	cmd.Flags().StringVar(&maxText, "max-bytes", "", "trim to this size, like 500MiB (default sandbox.cache_max_bytes)")
	cmd.Flags().BoolVar(&all, "all", false, "delete every entry (but those written in the last minute)")
	return cmd
}

// cacheFiles lists the regular files of the cache opened at root, with
// their total size, skipping what it cannot read and the records that name
// them (cachenames.Dir): through the directory's os.Root, a link in
// the cache never leads out of it.
func cacheFiles(root *os.Root) ([]cacheFile, int64) {
	var files []cacheFile
	var total int64
	_ = fs.WalkDir(root.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && path == cachenames.Dir {
			return fs.SkipDir // the entries' names, not entries (sweepCacheNames)
		}
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		f := cacheFile{path: path, size: fi.Size(), used: fi.ModTime(), modified: fi.ModTime()}
		if at := accessTime(fi); at.After(f.used) {
			f.used = at
		}
		files = append(files, f)
		total += f.size
		return nil
	})
	return files, total
}

// cacheFilesIn is cacheFiles of the cache at dir (none if it cannot be
// opened).
func cacheFilesIn(dir string) ([]cacheFile, int64) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, 0
	}
	defer root.Close()
	return cacheFiles(root)
}

// cacheKind names what a cache file holds, from its folder.
func cacheKind(path string) string {
	switch {
	case strings.HasSuffix(path, ".tmp"):
		return "partial"
	case strings.HasPrefix(path, "stint-prepared/"):
		return "prepared"
	case strings.HasPrefix(path, "wazero-"):
		return "compiled"
	}
	return "other"
}
