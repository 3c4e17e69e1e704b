//go:build !admpo_cuda

package driver

import (
	"errors"
	"testing"

	"github.com/admpo/admpo/internal/gpu"
)

func TestQueryWithoutTag(t *testing.T) {
	if Built {
		t.Fatal("Built is true without the admpo_cuda tag")
	}
	if _, err := Query(); !errors.Is(err, gpu.ErrNotBuilt) {
		t.Fatalf("Query = %v, want gpu.ErrNotBuilt", err)
	}
}
