package benchmarks

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// Table is a titled grid of measurements that prints as text or JSON.
type Table struct {
	Title   string            `json:"title"`
	Header  map[string]string `json:"environment"` // machine facts (BLAS core, threads, ...)
	Columns []string          `json:"columns"`
	Rows    [][]any           `json:"rows"`
	Notes   []string          `json:"notes,omitempty"`
}

// Fprint writes the table as aligned text.
func (t *Table) Fprint(w io.Writer) error {
	fmt.Fprintf(w, "%s\n", t.Title)
	for _, k := range sortedKeys(t.Header) {
		fmt.Fprintf(w, "  %s: %s\n", k, t.Header[k])
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for i, c := range t.Columns {
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, c)
	}
	fmt.Fprintln(tw, "\t")
	for _, r := range t.Rows {
		for i, v := range r {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, cell(v))
		}
		fmt.Fprintln(tw, "\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range t.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	return nil
}

// JSON returns the table as indented JSON.
func (t *Table) JSON() ([]byte, error) { return json.MarshalIndent(t, "", "  ") }

func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case float64:
		switch {
		case x >= 1000:
			return fmt.Sprintf("%.0f", x)
		case x >= 10:
			return fmt.Sprintf("%.1f", x)
		default:
			return fmt.Sprintf("%.2f", x)
		}
	default:
		return fmt.Sprint(x)
	}
}

func sortedKeys(m map[string]string) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	for i := 1; i < len(k); i++ {
		for j := i; j > 0 && k[j] < k[j-1]; j-- {
			k[j], k[j-1] = k[j-1], k[j]
		}
	}
	return k
}
