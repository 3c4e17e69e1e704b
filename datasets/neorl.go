package datasets

import (
	"errors"
	"fmt"
	"math"
)

// ReadNeoRL reads a NeoRL .npz file (arrays obs, next_obs, action, reward,
// done and index, the start row of each trajectory) in NeoRL's own layout:
// MuJoCo observations still carry the x position as obs[0], so use DropXPos
// (or ReadNeoRLTask) to get a task's layout. Terminal is done; Timeout marks
// the last row of each trajectory that does not end with done.
func ReadNeoRL(path string) (*Dataset, error) {
	return readNamed("NeoRL file", path, readNeoRL)
}

// ReadNeoRLTask reads a NeoRL file, drops the x position from its
// observations and checks the result against a task's observation and
// action sizes.
func ReadNeoRLTask(path string, obsDim, actDim int) (*Dataset, error) {
	d, err := ReadNeoRL(path)
	if err != nil {
		return nil, err
	}
	if d, err = DropXPos(d, obsDim); err != nil {
		return nil, fmt.Errorf("datasets: NeoRL file %s: %w", path, err)
	}
	if err := d.Validate(obsDim, actDim); err != nil {
		return nil, fmt.Errorf("datasets: NeoRL file %s: %w", path, err)
	}
	return d, nil
}

// DropXPos maps NeoRL's MuJoCo observation layout to the task's: it returns
// a copy of d whose Obs and NextObs lack column 0 (the x position). It
// refuses unless d's observations are exactly taskObsDim+1 wide. The copy
// shares every other array with d.
func DropXPos(d *Dataset, taskObsDim int) (*Dataset, error) {
	if d == nil {
		return nil, errors.New("datasets: DropXPos: nil dataset")
	}
	if d.ObsDim != taskObsDim+1 {
		hint := ""
		if d.ObsDim == taskObsDim {
			hint = "; it already has the task's width: is the x position already dropped?"
		}
		return nil, fmt.Errorf("datasets: cannot drop NeoRL's x position: observations are %d wide, want the task's %d + 1 = %d%s",
			d.ObsDim, taskObsDim, taskObsDim+1, hint)
	}
	out := *d
	out.ObsDim = taskObsDim
	out.Obs = dropFirstColumn(d.Obs, d.N, d.ObsDim)
	out.NextObs = dropFirstColumn(d.NextObs, d.N, d.ObsDim)
	return &out, nil
}

func dropFirstColumn(v []float32, rows, cols int) []float32 {
	out := make([]float32, rows*(cols-1))
	for i := 0; i < rows; i++ {
		copy(out[i*(cols-1):(i+1)*(cols-1)], v[i*cols+1:(i+1)*cols])
	}
	return out
}

func readNeoRL(path string) (*Dataset, error) {
	if _, err := statFile(path); err != nil {
		return nil, err
	}
	f, err := openNpz(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()

	arrs := map[string]*npyData{}
	for _, name := range []string{"obs", "next_obs", "action", "reward", "done", "index"} {
		a, err := f.read(name)
		if err != nil {
			return nil, err
		}
		arrs[name] = a
	}
	d := &Dataset{Meta: map[string]string{}}
	n, obsDim, err := arrs["obs"].rowsCols()
	if err != nil {
		return nil, err
	}
	if len(arrs["obs"].shape) != 2 {
		return nil, fmt.Errorf("obs has shape %v, want (N, width)", arrs["obs"].shape)
	}
	d.N, d.ObsDim = n, obsDim
	shapes := []struct {
		name  string
		width int // 0: any width, 2-D required
	}{{"next_obs", obsDim}, {"action", 0}, {"reward", 1}, {"done", 1}}
	for _, s := range shapes {
		a := arrs[s.name]
		r, c, err := a.rowsCols()
		if err != nil {
			return nil, err
		}
		if r != n {
			return nil, fmt.Errorf("length mismatch: %s has %d rows, obs has %d", s.name, r, n)
		}
		if s.width > 0 && c != s.width {
			return nil, fmt.Errorf("%s has shape %v, want width %d", s.name, a.shape, s.width)
		}
		if s.width == 0 && len(a.shape) != 2 {
			return nil, fmt.Errorf("%s has shape %v, want (N, width)", s.name, a.shape)
		}
		if s.width == 0 {
			d.ActDim = c
		}
	}
	for _, name := range []string{"obs", "next_obs", "action", "reward"} {
		if k := arrs[name].kind; k != 'f' {
			return nil, fmt.Errorf("%s has dtype kind %q, want float", name, k)
		}
	}
	d.Obs = values[float32](arrs["obs"])
	d.NextObs = values[float32](arrs["next_obs"])
	d.Act = values[float32](arrs["action"])
	d.Rew = values[float32](arrs["reward"])

	done := values[float64](arrs["done"])
	d.Terminal = make([]bool, n)
	for i, v := range done {
		switch v {
		case 0:
		case 1:
			d.Terminal[i] = true
		default:
			return nil, fmt.Errorf("done[%d] = %v, want 0 or 1", i, v)
		}
	}
	starts, err := trajectoryStarts(arrs["index"], n)
	if err != nil {
		return nil, err
	}
	d.Timeout = make([]bool, n)
	for j, s := range starts {
		end := n
		if j+1 < len(starts) {
			end = starts[j+1]
		}
		if last := end - 1; last >= s && !d.Terminal[last] {
			d.Timeout[last] = true
		}
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	return d, nil
}

// trajectoryStarts decodes and checks NeoRL's index array: integer start
// rows, the first 0, strictly increasing, each below n.
func trajectoryStarts(a *npyData, n int) ([]int, error) {
	if len(a.shape) != 1 {
		return nil, fmt.Errorf("index has shape %v, want (trajectories,)", a.shape)
	}
	raw := values[float64](a)
	if len(raw) == 0 {
		return nil, errors.New("index is empty")
	}
	starts := make([]int, len(raw))
	for j, v := range raw {
		if v != math.Trunc(v) {
			return nil, fmt.Errorf("index[%d] = %v is not an integer", j, v)
		}
		s := int(v)
		switch {
		case j == 0 && s != 0:
			return nil, fmt.Errorf("index[0] = %d, want 0", s)
		case j > 0 && s <= starts[j-1]:
			return nil, fmt.Errorf("index[%d] = %d does not increase (index[%d] = %d)", j, s, j-1, starts[j-1])
		case s >= n:
			return nil, fmt.Errorf("index[%d] = %d is past the last row %d", j, s, n-1)
		}
		starts[j] = s
	}
	return starts, nil
}
