package cli

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/orderlyhq/orderly/persistence"
)

// listFlags are the flags of a paged listing (jobs list, morgue list).
type listFlags struct {
	order, cursor, min, max, errText *string
	rev                              *bool
	limit                            *int
}

// addListFlags registers the listing flags; def is the default order (the
// node's), and orderHelp, noun and minHelp word them for the listing.
func addListFlags(fs *flagSet, def, orderHelp, noun, minHelp string) *listFlags {
	return &listFlags{
		order:   fs.String("order", def, orderHelp),
		rev:     fs.Bool("rev", false, "reverse order: highest first"),
		limit:   fs.Int("limit", 0, fmt.Sprintf("%s per page, 1 to %d (default %d)", noun, persistence.MaxListLimit, persistence.DefaultListLimit)),
		cursor:  fs.String("cursor", "", "continue after a previous page (its next: line)"),
		min:     fs.String("min", "", minHelp),
		max:     fs.String("max", "", "highest sort key to list"),
		errText: fs.String("error", "", "keep the entries whose last error contains this text, any case (the node reads up to 10,000 entries per page)"),
	}
}

// query checks the flags, --order against orders, and returns the
// listing's query string; stop is set (with the exit code) on bad flags.
func (l *listFlags) query(e *env, fs *flagSet, orders ...string) (q url.Values, code int, stop bool) {
	if !slices.Contains(orders, *l.order) {
		list := strings.Join(orders[:len(orders)-1], ", ") + " or " + orders[len(orders)-1]
		return nil, e.usage(fs, "--order must be %s, got %q", list, *l.order), true
	}
	set := given(fs)
	if set["limit"] && (*l.limit < 1 || *l.limit > persistence.MaxListLimit) {
		return nil, e.usage(fs, "--limit must be between 1 and %d, got %d", persistence.MaxListLimit, *l.limit), true
	}
	q = url.Values{}
	q.Set("order", *l.order)
	if *l.rev {
		q.Set("rev", "true")
	}
	if set["limit"] {
		q.Set("limit", strconv.Itoa(*l.limit))
	}
	for name, v := range map[string]string{"cursor": *l.cursor, "min": *l.min, "max": *l.max, "error": *l.errText} {
		if v != "" {
			q.Set(name, v)
		}
	}
	return q, 0, false
}

// emptyLine is what an empty last page prints: "no match" for a search,
// first on a first page, else end.
func (l *listFlags) emptyLine(first, end string) string {
	switch {
	case *l.errText != "":
		return "no match"
	case *l.cursor == "" && *l.min == "" && *l.max == "":
		return first
	}
	return end
}
