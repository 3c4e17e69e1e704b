package schema

import (
	"fmt"
	"strconv"
	"strings"
)

// JoinFloats writes v as comma-separated shortest float32 decimals, the
// format of the float-list metadata values (MetaNormMean, MetaNormStd,
// MetaScale, MetaBias, MetaLogStdMin, MetaLogStdMax).
func JoinFloats(v []float32) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(float64(x), 'g', -1, 32)
	}
	return strings.Join(s, ",")
}

// ParseFloats reads a JoinFloats string ("" gives nil).
func ParseFloats(s string) ([]float32, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	v := make([]float32, len(parts))
	for i, p := range parts {
		x, err := strconv.ParseFloat(strings.TrimSpace(p), 32)
		if err != nil {
			return nil, fmt.Errorf("value %d: %w", i, err)
		}
		v[i] = float32(x)
	}
	return v, nil
}
