package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// needKVM skips, loudly, where /dev/kvm cannot be opened.
func needKVM(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("SKIP: no usable /dev/kvm (%v): this test needs KVM", err)
	}
	f.Close()
}

// readReportCSV reads dir/report.csv: its rows after the header, and the
// header's columns by name.
func readReportCSV(t *testing.T, dir string) (rows [][]string, col map[string]int) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "report.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("report.csv: %v (%d records)", err, len(recs))
	}
	col = map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	return recs[1:], col
}

// csvCells reads one row of a report.csv by column name: get gives the
// cell as written, n the cell as a count (anything else fails the test).
func csvCells(t *testing.T, row []string, col map[string]int) (get func(string) string, n func(string) uint64) {
	get = func(k string) string { return row[col[k]] }
	n = func(k string) uint64 {
		v, err := strconv.ParseUint(get(k), 10, 64)
		if err != nil {
			t.Fatalf("CSV %s = %q: %v", k, get(k), err)
		}
		return v
	}
	return get, n
}
