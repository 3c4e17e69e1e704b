package train

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestModelFitK: the presets leave model_fit_k out of config.json (their
// runs' files, and fingerprints, are unchanged; absent is all); "one"
// round-trips through config.json (a resumed run keeps it) and reaches the
// ADM fit; other values, and one with a device, are refused.
func TestModelFitK(t *testing.T) {
	on, err := Preset("quick", "hopper", "admpo", 3)
	if err != nil {
		t.Fatal(err)
	}
	off, err := OfflinePreset("quick", "hopper", "medium", "admpo", 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][]byte{on.JSON(), off.JSON()} {
		if strings.Contains(string(p), "model_fit_k") {
			t.Errorf("a preset writes model_fit_k: %s", p)
		}
	}
	if on.dynamicsConfig().OneK || off.dynamicsConfig().OneK {
		t.Error("a preset fits one k per step")
	}
	on.ModelFitK, off.ModelFitK = "one", "one"
	var on2 OnlineConfig
	if err := json.Unmarshal(on.JSON(), &on2); err != nil {
		t.Fatal(err)
	}
	var off2 OfflineConfig
	if err := json.Unmarshal(off.JSON(), &off2); err != nil {
		t.Fatal(err)
	}
	if on2.ModelFitK != "one" || !on2.dynamicsConfig().OneK || off2.ModelFitK != "one" || !off2.dynamicsConfig().OneK {
		t.Errorf("model_fit_k one did not round-trip: online %q offline %q", on2.ModelFitK, off2.ModelFitK)
	}
	if err := on2.Validate(); err != nil {
		t.Errorf("online one: %v", err)
	}
	if err := off2.Validate(); err != nil {
		t.Errorf("offline one: %v", err)
	}
	on2.ModelFitK, off2.ModelFitK = "all", "all"
	if err := on2.Validate(); err != nil || on2.dynamicsConfig().OneK {
		t.Errorf("online all: %v", err)
	}
	on2.ModelFitK, off2.ModelFitK = "two", "two"
	if err := on2.Validate(); err == nil || !strings.Contains(err.Error(), "model fit k") {
		t.Errorf("online two: %v", err)
	}
	if err := off2.Validate(); err == nil || !strings.Contains(err.Error(), "model fit k") {
		t.Errorf("offline two: %v", err)
	}
	off2.ModelFitK, off2.Device = "one", "emu"
	if err := off2.Validate(); err == nil || !strings.Contains(err.Error(), "CPU only") {
		t.Errorf("offline one on emu: %v", err)
	}
}
