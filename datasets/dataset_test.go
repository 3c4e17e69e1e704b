package datasets

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// flagsDataset is a 9-row data set with hand-placed flags: a terminal at
// row 2, a timeout at row 5, both at row 6, and an unflagged tail 7..8.
func flagsDataset() *Dataset {
	n := 9
	d := &Dataset{N: n, ObsDim: 2, ActDim: 1,
		Obs: make([]float32, n*2), NextObs: make([]float32, n*2),
		Act: make([]float32, n), Rew: make([]float32, n),
		Terminal: make([]bool, n), Timeout: make([]bool, n)}
	d.Terminal[2] = true
	d.Timeout[5] = true
	d.Terminal[6], d.Timeout[6] = true, true
	return d
}

func TestEpisodesHandMade(t *testing.T) {
	want := []Episode{
		{Start: 0, End: 3, Terminal: true},
		{Start: 3, End: 6, Timeout: true},
		{Start: 6, End: 7, Terminal: true, Timeout: true},
		{Start: 7, End: 9},
	}
	if got := flagsDataset().Episodes(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Episodes() = %+v, want %+v", got, want)
	}
	if l := want[1].Len(); l != 3 {
		t.Fatalf("Len = %d, want 3", l)
	}

	// Flag on the last row: no tail.
	d := flagsDataset()
	d.Timeout[8] = true
	got := d.Episodes()
	if last := got[len(got)-1]; last != (Episode{Start: 7, End: 9, Timeout: true}) {
		t.Fatalf("last episode %+v, want [7,9) timeout", last)
	}
	// No flags at all: one unterminated episode.
	d = flagsDataset()
	d.Terminal = make([]bool, d.N)
	d.Timeout = make([]bool, d.N)
	if got := d.Episodes(); !reflect.DeepEqual(got, []Episode{{Start: 0, End: 9}}) {
		t.Fatalf("Episodes() = %+v, want one [0,9)", got)
	}
	// Empty.
	if got := (&Dataset{}).Episodes(); len(got) != 0 {
		t.Fatalf("empty data set gave %+v", got)
	}
}

func TestValidate(t *testing.T) {
	if err := flagsDataset().Validate(2, 1); err != nil {
		t.Fatalf("valid data set rejected: %v", err)
	}
	cases := []struct {
		name  string
		edit  func(d *Dataset)
		obs   int
		parts []string
	}{
		{"obs width", func(d *Dataset) {}, 3, []string{"observations are 2 wide, the task wants 3"}},
		{"neorl hint", func(d *Dataset) {}, 1, []string{"2 wide, the task wants 1", "DropXPos"}},
		{"act width", func(d *Dataset) { d.ActDim = 2; d.Act = make([]float32, 18) }, 2, []string{"actions are 2 wide, the task wants 1"}},
		{"short obs", func(d *Dataset) { d.Obs = d.Obs[:17] }, 2, []string{"observations has 17 values, want N*2 = 18"}},
		{"short next", func(d *Dataset) { d.NextObs = d.NextObs[:16] }, 2, []string{"next_observations has 16 values"}},
		{"short rew", func(d *Dataset) { d.Rew = d.Rew[:8] }, 2, []string{"rewards has 8 values, want N*1 = 9"}},
		{"short terminals", func(d *Dataset) { d.Terminal = d.Terminal[:8] }, 2, []string{"terminals has 8 rows, want N = 9"}},
		{"short timeouts", func(d *Dataset) { d.Timeout = d.Timeout[:1] }, 2, []string{"timeouts has 1 rows"}},
		{"short qpos", func(d *Dataset) { d.QPos, d.QPosDim = make([]float32, 5), 3 }, 2, []string{"infos/qpos has 5 values, want N*3 = 27"}},
		{"nan obs", func(d *Dataset) { d.Obs[2*2+1] = float32(math.NaN()) }, 2, []string{"observations[row 2, col 1] is NaN"}},
		{"inf rew", func(d *Dataset) { d.Rew[7] = float32(math.Inf(-1)) }, 2, []string{"rewards[row 7, col 0] is -Inf"}},
		{"inf next", func(d *Dataset) { d.NextObs[17] = float32(math.Inf(1)) }, 2, []string{"next_observations[row 8, col 1] is +Inf"}},
		{"empty", func(d *Dataset) { *d = Dataset{ObsDim: 2, ActDim: 1} }, 2, []string{"no transitions"}},
	}
	for _, c := range cases {
		d := flagsDataset()
		c.edit(d)
		err := d.Validate(c.obs, 1)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, p := range c.parts {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("%s: error %q lacks %q", c.name, err, p)
			}
		}
	}
}
