package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// span is the allowed range of a numeric flag's values: [Lo, Hi], with Lo
// itself excluded when Open. Every numeric flag of every command declares
// one (parse refuses a flag set with an undeclared one), so a bad value is a
// usage error naming the flag instead of a panic or a silent default.
type span struct {
	Lo, Hi float64
	Open   bool
}

var (
	anyNum   = span{Lo: math.Inf(-1), Hi: math.Inf(1)} // any finite number
	positive = span{Lo: 0, Hi: math.Inf(1), Open: true}
	nonNeg   = span{Lo: 0, Hi: math.Inf(1)}
	atLeast1 = span{Lo: 1, Hi: math.Inf(1)}
	unit     = span{Lo: 0, Hi: 1} // a share
)

// boundKey is the pflag annotation holding a flag's span.
const boundKey = "admpo/span"

// bound declares the span of the named numeric flags of fs.
func bound(fs *pflag.FlagSet, s span, names ...string) {
	v := []string{strconv.FormatFloat(s.Lo, 'g', -1, 64), strconv.FormatFloat(s.Hi, 'g', -1, 64), strconv.FormatBool(s.Open)}
	for _, n := range names {
		if err := fs.SetAnnotation(n, boundKey, v); err != nil {
			panic(fmt.Sprintf("admpo: bound: %v", err)) // a programming error: no such flag
		}
	}
}

// numericTypes are the pflag value types that checkBounds checks.
var numericTypes = map[string]bool{"int": true, "int64": true, "float64": true, "intSlice": true, "duration": true}

// checkBounds checks every given numeric flag of fs against its span; a
// numeric flag without one is an error (a command that forgot to declare it).
func checkBounds(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || !numericTypes[f.Value.Type()] {
			return
		}
		a, ok := f.Annotations[boundKey]
		if !ok || len(a) != 3 {
			err = fmt.Errorf("admpo %s: flag --%s declares no range of values", fs.Name(), f.Name)
			return
		}
		if !f.Changed {
			return
		}
		lo, _ := strconv.ParseFloat(a[0], 64)
		hi, _ := strconv.ParseFloat(a[1], 64)
		s := span{Lo: lo, Hi: hi, Open: a[2] == "true"}
		for _, v := range numericValues(f) {
			if !s.holds(v) {
				err = fmt.Errorf("%w: %s: --%s %s: %s", errUsage, fs.Name(), f.Name, f.Value.String(), s.want())
				return
			}
		}
	})
	return err
}

// numericValues are a numeric flag's values (durations in seconds).
func numericValues(f *pflag.Flag) []float64 {
	s := f.Value.String()
	switch f.Value.Type() {
	case "intSlice":
		s = strings.Trim(s, "[]")
		if s == "" {
			return []float64{math.NaN()} // an empty list is no list of sizes
		}
		var out []float64
		for _, p := range strings.Split(s, ",") {
			v, _ := strconv.ParseFloat(p, 64)
			out = append(out, v)
		}
		return out
	case "duration":
		d, _ := time.ParseDuration(s)
		return []float64{d.Seconds()}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return []float64{math.NaN()}
	}
	return []float64{v}
}

// holds tells whether v is finite and in the span.
func (s span) holds(v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) || v > s.Hi {
		return false
	}
	return v > s.Lo || (v == s.Lo && !s.Open)
}

// want says what the span allows.
func (s span) want() string {
	switch {
	case math.IsInf(s.Lo, -1) && math.IsInf(s.Hi, 1):
		return "must be a finite number"
	case math.IsInf(s.Hi, 1) && s.Open:
		return fmt.Sprintf("must be > %g", s.Lo)
	case math.IsInf(s.Hi, 1):
		return fmt.Sprintf("must be >= %g", s.Lo)
	case s.Open:
		return fmt.Sprintf("must be in (%g, %g]", s.Lo, s.Hi)
	}
	return fmt.Sprintf("must be in [%g, %g]", s.Lo, s.Hi)
}
