package bench

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Table is one Markdown table of a result.
type Table struct {
	Title  string     `json:"title"`
	Header []string   `json:"header"`
	Rows   [][]string `json:"rows"`
	// Notes are printed under the table, one paragraph each.
	Notes []string `json:"notes,omitempty"`
}

// AddRow appends a row.
func (t *Table) AddRow(cells ...string) { t.Rows = append(t.Rows, cells) }

// Markdown writes the table as GitHub-flavoured Markdown, under a level-3
// heading.
func (t *Table) Markdown(w io.Writer) {
	fmt.Fprintf(w, "### %s\n\n", t.Title)
	fmt.Fprintf(w, "| %s |\n", strings.Join(t.Header, " | "))
	seps := make([]string, len(t.Header))
	for i := range seps {
		seps[i] = "---"
		if i > 0 {
			seps[i] = "---:"
		}
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(seps, " | "))
	for _, r := range t.Rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
	fmt.Fprintln(w)
	for _, n := range t.Notes {
		fmt.Fprintf(w, "%s\n\n", n)
	}
}

// Result is what one benchmark produced: its tables and the raw samples
// behind them.
type Result struct {
	Name   string    `json:"name"`
	Tables []*Table  `json:"tables"`
	Series []*Series `json:"series"`
}

// NewSeries adds an empty series to r and returns it.
func (r *Result) NewSeries(name, unit string) *Series {
	s := &Series{Name: name, Unit: unit}
	r.Series = append(r.Series, s)
	return s
}

// NewTable adds an empty table to r and returns it.
func (r *Result) NewTable(title string, header ...string) *Table {
	t := &Table{Title: title, Header: header}
	r.Tables = append(r.Tables, t)
	return t
}

// Markdown writes every table of r.
func (r *Result) Markdown(w io.Writer) {
	for _, t := range r.Tables {
		t.Markdown(w)
	}
}

// Save writes r to dir as <name>.json (tables and samples) and <name>.csv
// (one row per sample: series, unit, index, value).
func (r *Result) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, r.Name+".json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, r.Name+".csv"))
	if err != nil {
		return err
	}
	cw := csv.NewWriter(f)
	_ = cw.Write([]string{"series", "unit", "index", "value"})
	for _, s := range r.Series {
		for i, v := range s.Values {
			_ = cw.Write([]string{s.Name, s.Unit, strconv.Itoa(i), strconv.FormatFloat(v, 'g', -1, 64)})
		}
	}
	cw.Flush()
	return errors.Join(cw.Error(), f.Close())
}

// series returns r's series of that name, or an empty one.
func (r *Result) series(name string) *Series {
	for _, s := range r.Series {
		if s.Name == name {
			return s
		}
	}
	return &Series{Name: name}
}
