package train

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAlphaKeyRename: offline configs keep alpha under "alpha", as online
// ones do; an old config.json's "init_alpha" loads as alpha (online too),
// and a config with both names is refused rather than one silently winning.
func TestAlphaKeyRename(t *testing.T) {
	c, err := OfflinePreset("paper", "hopper", "medium", "admpo", 3)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := json.Unmarshal(c.JSON(), &keys); err != nil {
		t.Fatal(err)
	}
	if keys["alpha"] != 0.05 || keys["init_alpha"] != nil {
		t.Fatalf("paper hopper-medium config.json: alpha %v, init_alpha %v; want alpha 0.05 only", keys["alpha"], keys["init_alpha"])
	}
	var oc OfflineConfig
	if err := json.Unmarshal([]byte(`{"algo":"admpo","init_alpha":0.37,"auto_alpha":false}`), &oc); err != nil || oc.Alpha != 0.37 {
		t.Fatalf("old offline key: alpha %v, %v", oc.Alpha, err)
	}
	var on OnlineConfig
	if err := json.Unmarshal([]byte(`{"algo":"sac","init_alpha":0.37}`), &on); err != nil || on.Alpha != 0.37 {
		t.Fatalf("old key online: alpha %v, %v", on.Alpha, err)
	}
	for _, dst := range []any{&oc, &on} {
		err := json.Unmarshal([]byte(`{"alpha":0.3,"init_alpha":0.37}`), dst)
		if err == nil || !strings.Contains(err.Error(), `"init_alpha"`) {
			t.Errorf("%T with both names: %v, want an error naming init_alpha", dst, err)
		}
	}
}
