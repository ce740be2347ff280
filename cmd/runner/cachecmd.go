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
deleted (a compilation may be writing it).`,
	}
	cmd.AddCommand(a.cacheListCommand(), a.cachePruneCommand())
	return cmd
}

func (a *app) cacheListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the compilation cache's entries, most recently used first",
		Example: `  runner cache list
  runner cache list --sandbox-cache-dir /var/cache/stint`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := a.compileCacheDir(true)
			if err != nil {
				return err
			}
			if dir == "" {
				fmt.Fprintln(a.stdout, "no compilation cache: data_dir does not exist and sandbox.user_cache is off")
				return nil
			}
			files, total := cacheFilesIn(dir)
			sort.Slice(files, func(i, j int) bool { return files[i].used.After(files[j].used) })
			fmt.Fprintf(a.stdout, "%s: %s, %s", dir, count(int64(len(files)), "entry"), humanize.IBytes(uint64(total)))
			if max := a.cfg.Sandbox.CacheMaxBytes; max > 0 {
				fmt.Fprintf(a.stdout, " of %s (sandbox.cache_max_bytes)", humanize.IBytes(uint64(max)))
			}
			fmt.Fprintln(a.stdout)
			if len(files) == 0 {
				return nil
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "KIND\tSIZE\tLAST USED\tENTRY")
			now := time.Now()
			for _, f := range files {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", cacheKind(f.path), humanize.IBytes(uint64(f.size)), ago(now, f.used), f.path)
			}
			return w.Flush()
		},
	}
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
// their total size, skipping what it cannot read: through the directory's
// os.Root, a link in the cache never leads out of it.
func cacheFiles(root *os.Root) ([]cacheFile, int64) {
	var files []cacheFile
	var total int64
	_ = fs.WalkDir(root.FS(), ".", func(path string, d fs.DirEntry, err error) error {
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
