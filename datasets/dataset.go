package datasets

import (
	"errors"
	"fmt"
	"os"

	"github.com/admpo/admpo/internal/stats"
)

// Dataset is an offline data set of N transitions (s, a, r, s', terminal,
// timeout), stored as flat row-major float32 arrays: Obs and NextObs are
// [N*ObsDim], Act is [N*ActDim], Rew, Terminal and Timeout are [N].
type Dataset struct {
	Obs, Act, Rew, NextObs []float32
	Terminal, Timeout      []bool
	ObsDim, ActDim, N      int

	// QPos and QVel are D4RL's optional infos/qpos and infos/qvel,
	// [N*QPosDim] and [N*QVelDim]; nil when absent.
	QPos, QVel       []float32
	QPosDim, QVelDim int
	// LogProb is D4RL's optional infos/action_log_probs, [N]; nil when absent.
	LogProb []float32

	// Meta holds string (and scalar numeric, formatted) metadata, keyed by
	// the path below metadata/ or by the attribute name.
	Meta map[string]string
}

// Episode is the half-open row range [Start, End) of one episode.
// Terminal and Timeout tell how its last row ended; both are false for a
// final tail that the data set cuts off without either flag.
type Episode struct {
	Start, End        int
	Terminal, Timeout bool
}

// Len returns the number of transitions in the episode.
func (e Episode) Len() int { return e.End - e.Start }

// Episodes splits the rows into episodes: each ends after a row whose
// Terminal or Timeout flag is set, and rows after the last such flag form a
// final unterminated episode.
func (d *Dataset) Episodes() []Episode {
	var eps []Episode
	start := 0
	for i := 0; i < d.N; i++ {
		term := i < len(d.Terminal) && d.Terminal[i]
		tout := i < len(d.Timeout) && d.Timeout[i]
		if term || tout {
			eps = append(eps, Episode{Start: start, End: i + 1, Terminal: term, Timeout: tout})
			start = i + 1
		}
	}
	if start < d.N {
		eps = append(eps, Episode{Start: start, End: d.N})
	}
	return eps
}

// EpisodeReturns counts the complete episodes (ended by a terminal or a
// timeout flag) and returns their mean return (0 when there are none).
func (d *Dataset) EpisodeReturns() (episodes int, mean float64) {
	for _, e := range d.Episodes() {
		if !e.Terminal && !e.Timeout {
			continue
		}
		for i := e.Start; i < e.End; i++ {
			mean += float64(d.Rew[i])
		}
		episodes++
	}
	if episodes > 0 {
		mean /= float64(episodes)
	}
	return episodes, mean
}

// CheckEpisodes refuses data that do not mark where their episodes end:
// no terminal and no timeout flag at all while some row's next observation
// is not the next row's observation (a reset nothing marks). A data set of
// one unbroken episode passes.
func (d *Dataset) CheckEpisodes() error {
	for i := 0; i < d.N; i++ {
		if d.Terminal[i] || d.Timeout[i] {
			return nil
		}
	}
	od := d.ObsDim
	for i := 0; i+1 < d.N; i++ {
		for j := 0; j < od; j++ {
			if d.NextObs[i*od+j] != d.Obs[(i+1)*od+j] {
				return fmt.Errorf("datasets: no episodes: terminals and timeouts are all false, yet row %d's next_observations are not row %d's observations (mark the episode ends in timeouts or terminals)", i, i+1)
			}
		}
	}
	return nil
}

// Validate checks that the data set fits a task with the given observation
// and action sizes: the widths match, every array has the length N implies,
// and every value is finite.
func (d *Dataset) Validate(obsDim, actDim int) error {
	if d == nil {
		return errors.New("datasets: nil dataset")
	}
	if d.ObsDim != obsDim {
		hint := ""
		if d.ObsDim == obsDim+1 {
			hint = " (one extra column: a NeoRL layout with the x position as obs[0]? use DropXPos)"
		}
		return fmt.Errorf("datasets: observations are %d wide, the task wants %d%s", d.ObsDim, obsDim, hint)
	}
	if d.ActDim != actDim {
		return fmt.Errorf("datasets: actions are %d wide, the task wants %d", d.ActDim, actDim)
	}
	return d.check()
}

// check verifies lengths and finiteness against the data set's own widths.
func (d *Dataset) check() error {
	if d.N <= 0 {
		return fmt.Errorf("datasets: no transitions (N = %d)", d.N)
	}
	if d.ObsDim <= 0 || d.ActDim <= 0 {
		return fmt.Errorf("datasets: widths must be positive (obs %d, act %d)", d.ObsDim, d.ActDim)
	}
	type arr struct {
		name  string
		v     []float32
		width int
	}
	arrs := []arr{
		{"observations", d.Obs, d.ObsDim},
		{"next_observations", d.NextObs, d.ObsDim},
		{"actions", d.Act, d.ActDim},
		{"rewards", d.Rew, 1},
	}
	if d.QPos != nil {
		arrs = append(arrs, arr{"infos/qpos", d.QPos, d.QPosDim})
	}
	if d.QVel != nil {
		arrs = append(arrs, arr{"infos/qvel", d.QVel, d.QVelDim})
	}
	if d.LogProb != nil {
		arrs = append(arrs, arr{"infos/action_log_probs", d.LogProb, 1})
	}
	for _, a := range arrs {
		if a.width <= 0 {
			return fmt.Errorf("datasets: %s has width %d", a.name, a.width)
		}
		if len(a.v) != d.N*a.width {
			return fmt.Errorf("datasets: %s has %d values, want N*%d = %d", a.name, len(a.v), a.width, d.N*a.width)
		}
	}
	if len(d.Terminal) != d.N {
		return fmt.Errorf("datasets: terminals has %d rows, want N = %d", len(d.Terminal), d.N)
	}
	if len(d.Timeout) != d.N {
		return fmt.Errorf("datasets: timeouts has %d rows, want N = %d", len(d.Timeout), d.N)
	}
	for _, a := range arrs {
		if i := stats.FirstNonFinite(a.v); i >= 0 {
			return fmt.Errorf("datasets: %s[row %d, col %d] is %v", a.name, i/a.width, i%a.width, a.v[i])
		}
	}
	return nil
}

// readNamed reads path with read and puts the format's name (what, e.g.
// "D4RL file") and path before its error.
func readNamed(what, path string, read func(string) (*Dataset, error)) (*Dataset, error) {
	d, err := read(path)
	if err != nil {
		return nil, fmt.Errorf("datasets: %s %s: %w", what, path, err)
	}
	return d, nil
}

// statFile returns the file information of path (symbolic links
// followed), refusing anything but a regular file: a directory, and a FIFO
// or device, which would block or never end when opened and read.
func statFile(path string) (os.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, errors.New("is a directory")
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("is not a regular file (mode %v)", st.Mode())
	}
	return st, nil
}
