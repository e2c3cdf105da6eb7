package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/engine/store"
)

// listFlags is what the --limit, --status and --cursor flags of a list
// command (wf tasks list, wf events list) ask for.
type listFlags[S ~string] struct {
	limit    int
	statuses []S
	// afterTime and afterID are the cursor's keyset position; nil without
	// --cursor.
	afterTime *time.Time
	afterID   *uuid.UUID
}

// listFlagsOf is a list command's flags: its filters, then --limit (default
// 50), --cursor and --format; row names one of its rows ("task") in their
// help.
func listFlagsOf(row string, filters ...cli.Flag) []cli.Flag {
	return append(filters,
		&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most `N` " + row + "s (1..1000)"},
		&cli.StringFlag{Name: "cursor", Usage: "continue after " + row + " `ID` (printed at the end of a page)"},
		formatFlag(formatText, formatJSON))
}

// parseListFlags checks a list command's --limit (1..1000), --status (each
// upper-cased, one of allowed) and --cursor (an id parseID accepts) flags;
// every mistake is a usage error.
func parseListFlags[S ~string](c *cli.Context, allowed []S, parseID func(string) (uuid.UUID, error)) (listFlags[S], error) {
	f := listFlags[S]{limit: c.Int("limit")}
	if f.limit < 1 || f.limit > 1000 {
		return f, Usagef("--limit must be between 1 and 1000, got %d", f.limit)
	}
	for _, s := range c.StringSlice("status") {
		st, ok := lookupStatus(allowed, strings.ToUpper(s))
		if !ok {
			return f, Usagef("--status %q: expected %s", s, orList(allowed))
		}
		f.statuses = append(f.statuses, st)
	}
	if cur := c.String("cursor"); cur != "" {
		id, err := parseID(cur)
		if err != nil {
			return f, err
		}
		at := store.IDTime(id)
		f.afterTime, f.afterID = &at, &id
	}
	return f, nil
}

// lookupStatus returns the status of allowed spelled s.
func lookupStatus[S ~string](allowed []S, s string) (S, bool) {
	for _, st := range allowed {
		if string(st) == s {
			return st, true
		}
	}
	return "", false
}

// orList spells the statuses as "A, B or C".
func orList[S ~string](statuses []S) string {
	names := make([]string, len(statuses))
	for i, st := range statuses {
		names[i] = string(st)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// listPage is one page of a list command's rows.
type listPage[T any] struct {
	// key names the rows in the JSON output.
	key  string
	rows []T
	// limit is the page size asked for: a full page has a next one.
	limit int
	// id is a row's id, the cursor of the page after it.
	id func(T) uuid.UUID
	// header is the text table's header line, its columns tab-separated.
	header string
	// writeRow writes a row's tab-separated line of the text table.
	writeRow func(w io.Writer, row T)
}

// print writes the page as JSON, {key: rows, "next_cursor": ID or ""}, or
// as a text table followed, when the page is full, by the --cursor of the
// next page.
func (p listPage[T]) print(w io.Writer, format string) error {
	next := ""
	if len(p.rows) == p.limit {
		next = p.id(p.rows[len(p.rows)-1]).String()
	}
	if format == formatJSON {
		rows := p.rows
		if rows == nil {
			rows = []T{}
		}
		return writeJSON(w, map[string]any{p.key: rows, "next_cursor": next})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, p.header)
	for _, r := range p.rows {
		p.writeRow(tw, r)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(w, "more: --cursor %s\n", next)
	}
	return nil
}
