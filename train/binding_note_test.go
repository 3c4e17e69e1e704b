package train

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/dynamics"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/internal/ortskip"
)

// fallbackRoller is a roll-out engine that says it could not bind its
// state to the provider's memory (infer.ADMIncremental.BindingError).
type fallbackRoller struct{ infer.Roller }

func (fallbackRoller) BindingError() error { return errors.New("no fresh_rows input") }

type fallbackDynamics struct{ dynamics.Model }

func (d fallbackDynamics) Roller(opts infer.Options) (infer.Roller, error) {
	r, err := d.Model.Roller(opts)
	if err != nil {
		return nil, err
	}
	return fallbackRoller{r}, nil
}

// TestRolloutBindingFallbackNoted: an engine that runs unbound where it
// was to bind is remarked in the first roll-out's log line, and only there.
func TestRolloutBindingFallbackNoted(t *testing.T) {
	ortskip.IfMissing(t)
	cfg := tinyConfig("admpo")
	o, err := NewOnline(cfg, filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	o.dyn = fallbackDynamics{o.dyn}
	var rolls, noted []int
	o.OnStatus(func(s Status) {
		if !strings.Contains(s.Message, "roll-out") {
			return
		}
		rolls = append(rolls, s.Step)
		if strings.Contains(s.Message, "copied through host memory") && strings.Contains(s.Message, "no fresh_rows input") {
			noted = append(noted, s.Step)
		}
	})
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rolls) < 2 || len(noted) != 1 || noted[0] != rolls[0] {
		t.Fatalf("roll-out lines at steps %v, the fallback remarked at %v: want it once, on the first", rolls, noted)
	}
}
