package batch_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint"
	"github.com/stint-run/stint/batch"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/tasks"
)

// tree writes files (path below root: content) and returns root.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	return root
}

// outputs reads every file below out, by path.
func outputs(t *testing.T, out string) map[string]string {
	t.Helper()
	got := map[string]string{}
	require.NoError(t, filepath.WalkDir(out, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		b, err := os.ReadFile(p)
		got[rel] = string(b)
		return err
	}))
	return got
}

func runConfig(t *testing.T, module string) batch.Config {
	t.Helper()
	dir := t.TempDir()
	return batch.Config{Module: wat.MustLoad(module), Out: filepath.Join(dir, "out"), Workers: 2,
		Runner: stint.Config{Store: "sqlite:" + filepath.Join(dir, "stint.db")}}
}

// --in DIR walks the tree, skipping dot-names and links to folders, and
// mirrors it under Out; an input named x.stderr is an input like any
// other, and a failure's stderr goes to Out/.stint-batch/stderr/NAME.
func TestRunWalksTheTree(t *testing.T) {
	t.Parallel()
	in := tree(t, map[string]string{
		"a.txt": "a\n", "sub/b.txt": "b\n", "sub/deep/c.txt": "c\n", "x.stderr": "x\n",
		".hidden": "no\n", ".dotdir/d.txt": "no\n", "sub/.e.txt": "no\n", "bad.bin": "not\x00text",
	})
	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(in, "linkdir")))
	c := runConfig(t, "upper")
	c.In = in
	sum, err := batch.Run(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, 5, sum.Total)
	require.Equal(t, 4, sum.Succeeded)
	require.Equal(t, 1, sum.Failed)
	require.Equal(t, filepath.Join(c.Out, batch.StderrDir, "bad.bin"), sum.Failures[0].StderrFile)
	got := outputs(t, c.Out)
	require.Equal(t, map[string]string{"a.txt": "A\n", "sub/b.txt": "B\n", "sub/deep/c.txt": "C\n", "x.stderr": "X\n",
		".stint-batch/stderr/bad.bin": "upper: the input is not text (it holds a NUL byte)\n"}, got)

	// Fixed, it runs again: its output written, its stale stderr gone.
	require.NoError(t, os.WriteFile(filepath.Join(in, "bad.bin"), []byte("now\n"), 0o644))
	sum, err = batch.Run(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, 1, sum.Succeeded)
	require.Equal(t, 4, sum.AlreadyDone)
	got = outputs(t, c.Out)
	require.Equal(t, "NOW\n", got["bad.bin"])
	require.NotContains(t, got, ".stint-batch/stderr/bad.bin")
}

// An Out below In is not walked: a second run does not take the first
// one's outputs for inputs.
func TestRunOutBelowIn(t *testing.T) {
	t.Parallel()
	in := tree(t, map[string]string{"a.txt": "a\n", "s/b.txt": "b\n"})
	c := runConfig(t, "upper")
	c.In, c.Out = in, filepath.Join(in, "out")
	for range 2 {
		sum, err := batch.Run(context.Background(), c)
		require.NoError(t, err)
		require.Equal(t, 2, sum.Total)
	}
	require.Equal(t, map[string]string{"a.txt": "A\n", "s/b.txt": "B\n"}, outputs(t, c.Out))
}

// A glob: ** matches any number of folders (none included), dot-names
// are skipped unless the pattern names them, and the outputs mirror the
// tree below the glob's fixed part.
func TestRunGlob(t *testing.T) {
	t.Parallel()
	in := tree(t, map[string]string{"a.txt": "a\n", "s/b.txt": "b\n", "s/t/c.txt": "c\n", "s/t/c.md": "no\n",
		".h.txt": "no\n", "s/.u/d.txt": "no\n"})
	for _, c := range []struct {
		pattern string
		want    map[string]string
	}{
		{"**/*.txt", map[string]string{"a.txt": "A\n", "s/b.txt": "B\n", "s/t/c.txt": "C\n"}},
		{"s/**/*.txt", map[string]string{"b.txt": "B\n", "t/c.txt": "C\n"}},
		{"*.txt", map[string]string{"a.txt": "A\n"}},
		{"*/*/*", map[string]string{"s/t/c.txt": "C\n", "s/t/c.md": "NO\n"}},
		{".*.txt", map[string]string{".h.txt": "NO\n"}},
	} {
		cfg := runConfig(t, "upper")
		cfg.In = filepath.Join(in, c.pattern)
		_, err := batch.Run(context.Background(), cfg)
		require.NoError(t, err, c.pattern)
		require.Equal(t, c.want, outputs(t, cfg.Out), c.pattern)
	}
}

// FilesFrom lists paths, one a line or NUL-separated; its relative paths
// are mirrored, its absolute ones named by their base name.
func TestRunFilesFrom(t *testing.T) {
	t.Parallel()
	in := tree(t, map[string]string{"a.txt": "a\n", "s/b\nc.txt": "bc\n", "s/d.txt": "d\n"})
	for _, null := range []bool{false, true} {
		c := runConfig(t, "upper")
		list := filepath.Join(t.TempDir(), "list")
		if null {
			require.NoError(t, os.WriteFile(list, []byte(filepath.Join(in, "a.txt")+"\x00"+filepath.Join(in, "s/b\nc.txt")+"\x00"), 0o644))
		} else {
			require.NoError(t, os.WriteFile(list, []byte(filepath.Join(in, "a.txt")+"\n\n"+filepath.Join(in, "s/d.txt")+"\n"), 0o644))
		}
		c.FilesFrom, c.NullSeparated = list, null
		sum, err := batch.Run(context.Background(), c)
		require.NoError(t, err)
		require.Equal(t, 2, sum.Total)
		if null {
			require.Equal(t, map[string]string{"a.txt": "A\n", "b\nc.txt": "BC\n"}, outputs(t, c.Out))
		} else {
			require.Equal(t, map[string]string{"a.txt": "A\n", "d.txt": "D\n"}, outputs(t, c.Out))
		}
	}
}

// OutputName and argument templates take GNU parallel's replacement
// strings; the task is labelled with its input's path; Plan says all of
// it and writes nothing.
func TestRunTemplates(t *testing.T) {
	t.Parallel()
	in := tree(t, map[string]string{"a.tar.gz": "a", "s/b.txt": "b"})
	c := runConfig(t, "args_env")
	c.In = in
	c.OutputName = "{//}/{/.}-{#}.out"
	c.ArgTemplates = true
	c.Spec = tasks.Spec{Args: []string{"{}", "{.}", "{/}", "{//}", "{/.}", "{#}", "{x}", "lit{"}}
	plan, err := batch.Plan(c)
	require.NoError(t, err)
	require.Equal(t, []batch.Planned{
		{Seq: 1, Input: filepath.Join(in, "a.tar.gz"), Output: filepath.Join(c.Out, "a.tar-1.out"),
			Args: []string{"a.tar.gz", "a.tar", "a.tar.gz", ".", "a.tar", "1", "{x}", "lit{"}},
		{Seq: 2, Input: filepath.Join(in, "s/b.txt"), Output: filepath.Join(c.Out, "s/b-2.out"),
			Args: []string{"s/b.txt", "s/b", "b.txt", "s", "b", "2", "{x}", "lit{"}},
	}, plan)
	_, err = os.Stat(c.Out)
	require.ErrorIs(t, err, os.ErrNotExist, "Plan writes nothing")

	sum, err := batch.Run(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, 2, sum.Succeeded)
	got := outputs(t, c.Out)
	require.True(t, strings.Contains(got["s/b-2.out"], "\ns/b.txt\ns/b\nb.txt\ns\nb\n2\n{x}\nlit{\n"), got["s/b-2.out"])

	// Two inputs with one output name are refused before any work.
	c.OutputName = "same"
	_, err = batch.Plan(c)
	require.ErrorIs(t, err, batch.ErrOutputCollision)
	c.OutputName = "../up"
	_, err = batch.Plan(c)
	require.ErrorContains(t, err, "leaves --out")
	c.OutputName = ".stint-batch/{}"
	_, err = batch.Plan(c)
	require.ErrorContains(t, err, "the batch's own")
}

// TestRunOutLinkNotFollowed: with Out below In (an upload folder and its
// processed/ subfolder), a link planted at Out/cron.d (or in the stderr
// folder) is never written through: its input fails, saying why, nothing
// lands where the link points, and the other inputs are written.
func TestRunOutLinkNotFollowed(t *testing.T) {
	t.Parallel()
	in := tree(t, map[string]string{"cron.d/evil": "evil\n", "ok.txt": "ok\n", "bad/x.bin": "not\x00text"})
	c := runConfig(t, "upper")
	c.In, c.Out = in, filepath.Join(in, "processed")
	elsewhere, stderrElsewhere := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(c.Out, batch.StderrDir), 0o755))
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(c.Out, "cron.d")))
	require.NoError(t, os.Symlink(stderrElsewhere, filepath.Join(c.Out, batch.StderrDir, "bad")))
	sum, err := batch.Run(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, 3, sum.Total)
	require.Equal(t, 1, sum.Succeeded)
	require.Equal(t, 2, sum.Failed)
	reasons := map[string]string{}
	for _, f := range sum.Failures {
		reasons[filepath.Base(f.Input)] = f.Reason
	}
	require.Contains(t, reasons["evil"], "a symbolic link: runner batch follows no links in --out")
	require.Contains(t, reasons["x.bin"], "a symbolic link: runner batch follows no links in --out", "its stderr file")
	for _, dir := range []string{elsewhere, stderrElsewhere} {
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, ents, "nothing written through the link")
	}
	got, err := os.ReadFile(filepath.Join(c.Out, "ok.txt"))
	require.NoError(t, err)
	require.Equal(t, "OK\n", string(got))
}

// TestRunFilesFromFollowsNoFolderLink: a listed path whose folder was
// swapped for a link (up/d -> a folder out of the upload) is not read
// through it: that input fails, saying why, and the others run.
func TestRunFilesFromFollowsNoFolderLink(t *testing.T) {
	t.Parallel()
	in := tree(t, map[string]string{"up/d/x.txt": "x\n", "up/ok.txt": "ok\n"})
	secret := tree(t, map[string]string{"x.txt": "secret\n"})
	require.NoError(t, os.RemoveAll(filepath.Join(in, "up", "d")))
	require.NoError(t, os.Symlink(secret, filepath.Join(in, "up", "d")))
	// And a link higher up: up2 -> up.
	require.NoError(t, os.Symlink(filepath.Join(in, "up"), filepath.Join(in, "up2")))
	c := runConfig(t, "upper")
	list := filepath.Join(t.TempDir(), "list")
	require.NoError(t, os.WriteFile(list, []byte(filepath.Join(in, "up/d/x.txt")+"\n"+filepath.Join(in, "up/ok.txt")+"\n"+
		filepath.Join(in, "up2/ok.txt")+"\n"), 0o644))
	c.FilesFrom = list
	c.OutputName = "{#}"
	sum, err := batch.Run(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, 3, sum.Total)
	require.Equal(t, 1, sum.Succeeded)
	require.Equal(t, 2, sum.Failed)
	for _, f := range sum.Failures {
		require.Contains(t, f.Reason, "a symbolic link", f.Input)
	}
	got := outputs(t, c.Out)
	require.Equal(t, "OK\n", got["2"])
	for name, content := range got {
		require.NotContains(t, content, "SECRET", name)
	}
}
