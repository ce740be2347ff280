package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// kubeBytes reads a Kubernetes quantity of memory ("2Gi", "512Mi") or a
// Go/runner size ("1536MiB", "256MiB"), in bytes.
func kubeBytes(t *testing.T, s string) int64 {
	t.Helper()
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			require.NoError(t, err, "size %q", s)
			return v * u.mult
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err, "size %q", s)
	return v
}

// kubeDocs returns the documents of runner.yaml by kind.
func kubeDocs(t *testing.T) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, d := range yamlDocs(t, "kubernetes/runner.yaml") {
		out[d["kind"].(string)] = d
	}
	return out
}

// TestKubernetesMemory: the Deployment's workers, their guests' memory
// and the compiled modules fit under GOMEMLIMIT, itself under the
// container's memory limit; a PodDisruptionBudget covers the pods.
func TestKubernetesMemory(t *testing.T) {
	docs := kubeDocs(t)
	dep := docs["Deployment"]
	c := at(t, dep, "spec", "template", "spec", "containers", 0)
	env := map[string]string{}
	for _, e := range at(t, c, "env").([]any) {
		e := e.(map[string]any)
		if v, ok := e["value"].(string); ok {
			env[e["name"].(string)] = v
		}
	}
	for _, k := range []string{"GOMEMLIMIT", "RUNNER_WORKERS", "RUNNER_LIMITS_MAX_MEMORY", "RUNNER_MAX_COMPILED_MODULE_BYTES"} {
		require.NotEmpty(t, env[k], "%s is not set: the runner would size itself by the node, not the pod", k)
	}
	limit := kubeBytes(t, at(t, c, "resources", "limits", "memory").(string))
	goLimit := kubeBytes(t, env["GOMEMLIMIT"])
	workers, err := strconv.ParseInt(env["RUNNER_WORKERS"], 10, 64)
	require.NoError(t, err)
	guests := workers * kubeBytes(t, env["RUNNER_LIMITS_MAX_MEMORY"])
	compiled := kubeBytes(t, env["RUNNER_MAX_COMPILED_MODULE_BYTES"])
	require.Less(t, goLimit, limit, "GOMEMLIMIT must be under the container's memory limit")
	require.LessOrEqual(t, goLimit, limit*9/10, "GOMEMLIMIT leaves no room for what is not Go's heap")
	require.Less(t, guests+compiled, goLimit, "%d workers × max memory + compiled modules do not fit under GOMEMLIMIT", workers)

	pdb := docs["PodDisruptionBudget"]
	require.NotNil(t, pdb, "no PodDisruptionBudget")
	require.Equal(t, "policy/v1", pdb["apiVersion"])
	require.Equal(t, at(t, dep, "spec", "selector", "matchLabels"), at(t, pdb, "spec", "selector", "matchLabels"))
	unavailable, ok := at(t, pdb, "spec", "maxUnavailable").(int)
	require.True(t, ok, "maxUnavailable is not an integer")
	require.Less(t, unavailable, at(t, dep, "spec", "replicas").(int))
}

var fenceRE = regexp.MustCompile("(?ms)^```(yaml|ini)\n(.*?)^```")

// TestDeploymentDocAgrees: every YAML and systemd snippet of
// docs/deployment.md is an excerpt of the file in deploy/ it shows, with
// the same values, and the table of files says what the files hold.
func TestDeploymentDocAgrees(t *testing.T) {
	doc, err := os.ReadFile("../docs/deployment.md")
	require.NoError(t, err)
	kube := kubeDocs(t)
	f, err := os.Open("systemd/stint-runner.service")
	require.NoError(t, err)
	defer f.Close()
	unitFile, err := parseUnit(f)
	require.NoError(t, err)

	blocks := fenceRE.FindAllSubmatch(doc, -1)
	require.NotEmpty(t, blocks)
	seen := map[string]int{}
	for i, b := range blocks {
		lang, body := string(b[1]), b[2]
		seen[lang]++
		switch lang {
		case "yaml":
			dec := yaml.NewDecoder(bytes.NewReader(body))
			for {
				var d map[string]any
				err := dec.Decode(&d)
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err, "yaml snippet %d", i)
				kind, _ := d["kind"].(string)
				file, ok := kube[kind]
				require.True(t, ok, "yaml snippet %d: kind %q is not in deploy/kubernetes/runner.yaml", i, kind)
				if err := excerpt(d, file, kind); err != nil {
					t.Errorf("docs/deployment.md's %s snippet disagrees with deploy/kubernetes/runner.yaml: %v", kind, err)
				}
			}
		case "ini":
			snip, err := parseUnit(bytes.NewReader(stripComments(body)))
			require.NoError(t, err, "ini snippet %d", i)
			for sec, keys := range snip {
				for k, vs := range keys {
					for _, v := range vs {
						got := unitFile[sec][k]
						if !contains(got, v) {
							t.Errorf("docs/deployment.md's unit says [%s] %s=%s; deploy/systemd/stint-runner.service has %q", sec, k, v, got)
						}
					}
				}
			}
		}
	}
	require.Positive(t, seen["yaml"], "no yaml snippet checked")
	require.Positive(t, seen["ini"], "no unit snippet checked")

	// The table's `key: value` and `Key=Value` facts of each file.
	rowRE := regexp.MustCompile("(?m)^\\| \\[`deploy/([^`]+)`\\]\\([^)]*\\) \\| (.*) \\|$")
	factRE := regexp.MustCompile("`([A-Za-z_]+(?:: |=)[^`]+)`")
	rows := rowRE.FindAllStringSubmatch(string(doc), -1)
	require.NotEmpty(t, rows)
	for _, r := range rows {
		b, err := os.ReadFile(r[1])
		require.NoError(t, err, r[1])
		for _, fact := range factRE.FindAllStringSubmatch(r[2], -1) {
			if strings.Contains(fact[1], "...") { // a command with placeholders
				continue
			}
			if !bytes.Contains(b, []byte(fact[1])) {
				t.Errorf("docs/deployment.md says %s holds `%s`; it does not", r[1], fact[1])
			}
		}
	}
}

// stripComments drops the trailing "# ..." comments of an ini snippet's
// lines (systemd itself takes only whole-line comments).
func stripComments(b []byte) []byte {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if i := strings.Index(l, "  #"); i >= 0 {
			l = strings.TrimRight(l[:i], " ")
		}
		out = append(out, l)
	}
	return []byte(strings.Join(out, "\n"))
}

func contains(l []string, v string) bool {
	for _, s := range l {
		if s == v {
			return true
		}
	}
	return false
}

// excerpt reports whether snip is part of file: every map key with an
// excerpt of its value, every list element an excerpt of some element (a
// list of maps with "name" keys matched by name), scalars equal.
func excerpt(snip, file any, path string) error {
	switch s := snip.(type) {
	case map[string]any:
		f, ok := file.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: a map in the doc, %T in the file", path, file)
		}
		for k, v := range s {
			fv, ok := f[k]
			if !ok {
				return fmt.Errorf("%s.%s: not in the file", path, k)
			}
			if err := excerpt(v, fv, path+"."+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		f, ok := file.([]any)
		if !ok {
			return fmt.Errorf("%s: a list in the doc, %T in the file", path, file)
		}
		for i, e := range s {
			var last error
			found := false
			for _, fe := range f {
				if m, ok := e.(map[string]any); ok {
					if fm, ok := fe.(map[string]any); ok && m["name"] != nil && m["name"] != fm["name"] {
						continue
					}
				}
				if last = excerpt(e, fe, fmt.Sprintf("%s[%d]", path, i)); last == nil {
					found = true
					break
				}
			}
			if !found {
				if last == nil {
					last = fmt.Errorf("%s[%d]: %v is not in the file", path, i, e)
				}
				return last
			}
		}
		return nil
	}
	if fmt.Sprint(snip) != fmt.Sprint(file) {
		return fmt.Errorf("%s: %v in the doc, %v in the file", path, snip, file)
	}
	return nil
}
