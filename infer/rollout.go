package infer

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/admpo/admpo/internal/rollout"
	"github.com/admpo/admpo/internal/stats"
	"github.com/admpo/admpo/internal/window"
)

// Start holds the start sequences of a roll-out batch (rollout.Start): row
// i has Len[i] states (1..M; the last is the current state) and Len[i]-1
// actions between them.
type Start = rollout.Start

// Transitions are the roll-out's output, one row per model step taken
// (rollout.Transitions).
type Transitions = rollout.Transitions

// RollConfig controls a roll-out (rollout.RollConfig): horizon, penalty,
// Done, chunk rows, deterministic policy, context and WantMean.
type RollConfig = rollout.RollConfig

// Roller rolls a policy out in a learned dynamics model. An ADM engine
// whose graph has MC dropout draws its masks' seed with one rng.Int63()
// before any other draw of the roll-out (see DropoutKeep).
type Roller interface {
	Rollout(p *Policy, start *Start, cfg RollConfig, rng *rand.Rand) (*Transitions, error)
	Close()
}

// prediction is what a stepper returns for the alive rows.
type prediction struct {
	next []float32 // mean next observation [n, obsDim]
	rew  []float32 // mean reward [n]
	lv   []float32 // log-variance of [next obs, reward] [n, obsDim+1]
	u    []float32 // uncertainty [n] (when asked)
	k    []int     // backtracking length per alive row (nil: 1, one-step models)
}

// stepper is the model-specific part of a roll-out.
type stepper interface {
	dims() (m, obsDim, actDim int)
	// begin prepares the model state for a chunk's windows.
	begin(w *window.Window) error
	// predict draws each alive row's model choice (backtracking length or
	// ensemble member) from rng in row order and fills p.
	predict(w *window.Window, alive []int, wantU bool, rng *rand.Rand, p *prediction) error
	// advance is told, for each alive row in order, whether it continues;
	// it runs after the windows' push.
	advance(w *window.Window, alive []int, cont []bool)
}

// chunkRowsOf is RollConfig.ChunkRows's default for st: the ADM-Roll
// engines' own (split.chunkRows), defaultChunkRows for the others.
func chunkRowsOf(st stepper) int {
	if c, ok := st.(interface{ chunkRows() int }); ok {
		return c.chunkRows()
	}
	return defaultChunkRows
}

// runRollout is the loop shared by every engine: policy action, model
// prediction, Gaussian sample, penalty, termination, history update.
func runRollout(st stepper, p *Policy, start *Start, cfg RollConfig, rng *rand.Rand) (*Transitions, error) {
	m, od, ad := st.dims()
	if err := checkStart(start, m, od, ad); err != nil {
		return nil, err
	}
	if p.ObsDim != od || p.ActDim != ad {
		return nil, fmt.Errorf("infer: policy is %dx%d but the model is %dx%d (obs x act)", p.ObsDim, p.ActDim, od, ad)
	}
	if cfg.Horizon <= 0 {
		return nil, fmt.Errorf("infer: roll-out horizon must be positive, got %d", cfg.Horizon)
	}
	done, err := cfg.DoneFunc(od) // cfg.Done itself without a DoneSpec
	if err != nil {
		return nil, fmt.Errorf("infer: %w", err)
	}
	cfg.Done = done
	chunk := cfg.ChunkRows
	if chunk <= 0 {
		chunk = chunkRowsOf(st)
	}
	wantU := cfg.WantU || cfg.Penalty != 0
	var drop *dropout // MC dropout: the masks' seed comes first from rng
	if d, ok := st.(dropper); ok && d.dropState().on() {
		drop = d.dropState()
		drop.seed = rng.Int63()
	}
	out := rollout.NewTransitions(start.N*cfg.Horizon, od, ad)
	if cfg.WantMean {
		out.MeanNextObs = make([]float32, 0, start.N*cfg.Horizon*od)
	}
	for lo := 0; lo < start.N; lo += chunk {
		if cfg.Context != nil && cfg.Context.Err() != nil {
			return nil, fmt.Errorf("infer: roll-out stopped after %d of %d rows: %w", lo, start.N, cfg.Context.Err())
		}
		hi := min(lo+chunk, start.N)
		if err := rollChunk(st, p, start, lo, hi, cfg, wantU, rng, drop, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func rollChunk(st stepper, p *Policy, start *Start, lo, hi int, cfg RollConfig, wantU bool, rng *rand.Rand, drop *dropout, out *Transitions) error {
	m, od, ad := st.dims()
	rows := hi - lo
	w := window.New(rows, m, od, ad)
	for r := 0; r < rows; r++ {
		i := lo + r
		w.Len[r] = start.Len[i]
		copy(w.S[r*m*od:], start.Obs[i*m*od:(i*m+start.Len[i])*od])
		if m > 1 {
			copy(w.A[r*m*ad:], start.Act[i*(m-1)*ad:(i*(m-1)+start.Len[i]-1)*ad])
		}
	}
	if err := st.begin(w); err != nil {
		return err
	}
	alive := make([]int, rows)
	for r := range alive {
		alive[r] = r
	}
	obs := make([]float32, rows*od)
	act := make([]float32, rows*ad)
	noise := make([]float32, rows*ad)
	eps := make([]float64, rows*(od+1)) // the Gaussian sample's draws
	fin := make([]bool, rows)           // the next state is finite
	cont := make([]bool, rows)
	loop := serialRows // how the per-row host loops run (hostLoops)
	if h, ok := st.(hostLoops); ok {
		loop = h.rowLoop()
	}
	var pr prediction
	for step := 0; step < cfg.Horizon && len(alive) > 0; step++ {
		n := len(alive)
		loop(n, func(lo, hi int) {
			for q, r := range alive[lo:hi] {
				copy(obs[(lo+q)*od:], w.Current(r))
			}
		})
		var nz []float32
		if !cfg.DeterministicPolicy {
			nz = noise[:n*ad]
			for i := range nz {
				nz[i] = float32(rng.NormFloat64())
			}
		}
		if err := p.Act(obs[:n*od], nz, act[:n*ad]); err != nil {
			return fmt.Errorf("infer: roll-out step %d: %w", step, err)
		}
		loop(n, func(lo, hi int) {
			for q, r := range alive[lo:hi] {
				w.SetAction(r, act[(lo+q)*ad:(lo+q+1)*ad])
			}
		})
		if drop != nil {
			drop.step, drop.row0 = step, lo
		}
		if err := st.predict(w, alive, wantU, rng, &pr); err != nil {
			return fmt.Errorf("infer: roll-out step %d: %w", step, err)
		}
		// Every row's draws, in row order: the od state noises, then the
		// reward's. Drawn here, the rows' samples, outputs and window
		// updates below can run in parallel.
		for i := range eps[:n*(od+1)] {
			eps[i] = rng.NormFloat64()
		}
		base := out.N
		out.Grow(n, od, ad)
		if cfg.WantMean {
			out.MeanNextObs = append(out.MeanNextObs, pr.next[:n*od]...)
		}
		loop(n, func(lo, hi int) {
			for q := lo; q < hi; q++ {
				t := base + q
				lv := pr.lv[q*(od+1) : (q+1)*(od+1)]
				e := eps[q*(od+1) : (q+1)*(od+1)]
				next := out.NextObs[t*od : (t+1)*od]
				for d := 0; d < od; d++ {
					next[d] = pr.next[q*od+d] + float32(math.Exp(0.5*float64(lv[d]))*e[d])
				}
				rew := pr.rew[q] + float32(math.Exp(0.5*float64(lv[od]))*e[od])
				var u float32
				if wantU {
					u = pr.u[q]
					rew -= cfg.Penalty * u
				}
				copy(out.Obs[t*od:(t+1)*od], obs[q*od:(q+1)*od])
				copy(out.Act[t*ad:(t+1)*ad], act[q*ad:(q+1)*ad])
				out.Rew[t] = rew
				out.Uncertainty[t] = u
				out.Step[t] = int32(step)
				back := int32(1)
				if pr.k != nil {
					back = int32(pr.k[q])
				}
				out.Back[t] = back
				fin[q] = stats.Finite(next)
				if cfg.Done == nil { // the row's end is known: finish it here
					out.Done[t] = !fin[q]
					cont[q] = fin[q]
					if fin[q] {
						w.Push(alive[q], next)
					}
				}
			}
		})
		if cfg.Done != nil { // Done runs on this goroutine only, in row order
			for q := 0; q < n; q++ {
				t := base + q
				done := !fin[q] || cfg.Done(out.NextObs[t*od:(t+1)*od])
				out.Done[t] = done
				cont[q] = !done
			}
			loop(n, func(lo, hi int) {
				for q := lo; q < hi; q++ {
					if cont[q] {
						t := base + q
						w.Push(alive[q], out.NextObs[t*od:(t+1)*od])
					}
				}
			})
		}
		st.advance(w, alive, cont[:n])
		k := 0
		for q, r := range alive {
			if cont[q] {
				alive[k] = r
				k++
			}
		}
		alive = alive[:k]
	}
	return nil
}

func checkStart(s *Start, m, od, ad int) error {
	if s == nil || s.N <= 0 {
		return fmt.Errorf("infer: empty start batch")
	}
	if s.M != m {
		return fmt.Errorf("infer: start sequences have M=%d, the model m=%d", s.M, m)
	}
	if len(s.Len) != s.N || len(s.Obs) != s.N*m*od || (m > 1 && len(s.Act) != s.N*(m-1)*ad) {
		return fmt.Errorf("infer: start batch sizes: %d lengths, %d obs values, %d action values for N=%d, M=%d, obs %d, act %d",
			len(s.Len), len(s.Obs), len(s.Act), s.N, m, od, ad)
	}
	for i, l := range s.Len {
		if l < 1 || l > m {
			return fmt.Errorf("infer: start row %d has %d states, want 1..%d", i, l, m)
		}
		if !stats.Finite(s.Obs[i*m*od : (i*m+l)*od]) {
			return fmt.Errorf("infer: start row %d has a NaN or Inf observation", i)
		}
		if m > 1 && !stats.Finite(s.Act[i*(m-1)*ad:(i*(m-1)+l-1)*ad]) {
			return fmt.Errorf("infer: start row %d has a NaN or Inf action", i)
		}
	}
	return nil
}

// drawK draws each alive row's backtracking length uniformly from
// 1..min(states, m), in row order (shared by the ADM engines so that the same
// seed gives the same choices).
func drawK(w *window.Window, alive []int, rng *rand.Rand, k []int) []int {
	k = k[:0]
	for _, r := range alive {
		k = append(k, 1+rng.Intn(w.Len[r]))
	}
	return k
}

// uADM is UADM as float32, the engines' uncertainty column.
func uADM(preds []float32, kn, od int) float32 {
	return float32(UADM(preds, kn, od))
}

// UADM is U^ADM for one row (rollout.UADM): sqrt(mean over the od state
// dims of the population variance over k of the kn mean next-state
// predictions in preds (kn rows of od values, one per backtracking length
// k)); 0 when kn <= 1. The roll-out engines and the deployed policy's
// monitor share it.
func UADM(preds []float32, kn, od int) float64 { return rollout.UADM(preds, kn, od) }
