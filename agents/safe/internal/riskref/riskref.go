// Package riskref reads the table of exact risks, agents/safe/beta/testdata/risk_reference.csv
// (written with mpmath by gen_risk_table.py beside it), for the tests that hold package beta's
// risks and the safe agent's decisions to it.
package riskref

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Row is one row of the table: the exact risk of (Mu, Sigma, T).
type Row struct {
	Line         int
	Mu, Sigma, T float64
	Kind         string // beta, mu0, sigma0, point or nofit
	Alpha, Beta  float64
	Risk         float64 // exact, rounded to float64; 0 when below 1e-300
}

// Read reads the table at path; a malformed row, or fewer than 1000, is an error.
func Read(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []Row
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") || strings.HasPrefix(text, "mu,") {
			continue
		}
		fields := strings.Split(text, ",")
		if len(fields) != 7 {
			return nil, fmt.Errorf("%s:%d: %d fields, want 7", path, line, len(fields))
		}
		var v [6]float64
		for i, j := range []int{0, 1, 2, 4, 5, 6} {
			if v[i], err = strconv.ParseFloat(fields[j], 64); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, line, err)
			}
		}
		rows = append(rows, Row{line, v[0], v[1], v[2], fields[3], v[3], v[4], v[5]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rows) < 1000 {
		return nil, fmt.Errorf("%s: %d rows", path, len(rows))
	}
	return rows, nil
}
