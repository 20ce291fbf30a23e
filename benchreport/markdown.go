// This file holds what every report's Markdown tables share: the header
// and the rule line that aligns their columns.

package benchreport

import (
	"fmt"
	"io"
	"strings"
)

// writeHeader writes a Markdown table's header line of cols and its rule
// line, one letter of align a column: 'l' left (names, words), 'r' right
// (figures).
func writeHeader(w io.Writer, align string, cols ...string) {
	if len(align) != len(cols) {
		panic(fmt.Sprintf("benchreport: %d alignments for %d columns", len(align), len(cols)))
	}
	fmt.Fprintf(w, "| %s |\n|", strings.Join(cols, " | "))
	for _, a := range align {
		if a == 'r' {
			fmt.Fprint(w, "---:|")
		} else {
			fmt.Fprint(w, "---|")
		}
	}
	fmt.Fprintln(w)
}
