package envs

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strings"

	"github.com/admpo/admpo/internal/rollout"
	"github.com/admpo/admpo/internal/stats"
)

// MaxEpisodeSteps is the Gymnasium v4 time limit: episodes are truncated
// (not terminated) after this many steps.
const MaxEpisodeSteps = 1000

// Task describes one MuJoCo task with Gymnasium v4 semantics.
type Task struct {
	Name      string  // e.g. "hopper"
	Model     string  // embedded MJCF file under assets/
	FrameSkip int     // physics steps per env step
	ObsDim    int     // observation size
	ActDim    int     // action size
	Summary   string  // one line for `admpo envs list`
	Forward   float64 // weight of the forward velocity reward
	Healthy   float64 // reward for every step alive
	CtrlCost  float64 // weight of the sum of squared actions

	// Done reports whether an observation (e.g. one predicted by a model)
	// ends the episode; it matches the env's own termination. It is nil for
	// a task file whose termination reads values the observation leaves
	// out (model roll-outs then need a learned rule).
	Done func(obs []float32) bool
	// DoneSpec is Done as data, for a device roll-out to evaluate: its Eval
	// equals Done on every observation. The built-in tasks and task files
	// set it wherever they set Done (Never for a task that never
	// terminates); it is nil where Done is nil and on a Task built elsewhere
	// (train's offline task may carry a learned Done). Roll-outs use Done.
	DoneSpec *rollout.DoneSpec

	// MaxSteps truncates episodes after this many steps (0: MaxEpisodeSteps).
	MaxSteps int
	// File is the task file a task was read from (empty for the built-in
	// tasks), Digest the SHA-256 (hex) of its content and its MJCF model's,
	// and Preset the built-in task whose training presets it takes.
	File, Digest, Preset string

	obsSkip    int     // leading qpos entries left out of the observation
	velClip    float64 // velocities clipped to ±velClip in the observation (0: no clip)
	resetNoise func(s *sim, rng *rand.Rand)
	xPosition  func(s *sim) float64
	isHealthy  func(qpos, qvel []float64) bool
	constant   float64              // reward per step for tasks without movement reward (inverted pendulum)
	load       func() (*sim, error) // compiles a task file's model (nil: the embedded Model)
}

// EpisodeLimit is the number of steps after which episodes are truncated.
func (t *Task) EpisodeLimit() int {
	if t.MaxSteps > 0 {
		return t.MaxSteps
	}
	return MaxEpisodeSteps
}

var tasks = map[string]*Task{}

func register(t *Task) { tasks[t.Name] = t }

// Lookup returns the task called name (case-insensitive; "-" and "_" and
// "-v4" suffixes are accepted, e.g. "Hopper-v4", "half_cheetah").
func Lookup(name string) (*Task, error) {
	key := strings.ToLower(strings.TrimSuffix(strings.ToLower(name), "-v4"))
	key = strings.ReplaceAll(key, "_", "-")
	switch key {
	case "half-cheetah":
		key = "halfcheetah"
	case "invertedpendulum":
		key = "inverted-pendulum"
	}
	if t, ok := tasks[key]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("envs: unknown task %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the registered tasks in alphabetical order.
func Names() []string {
	var n []string
	for k := range tasks {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// DoneBatch applies the task's termination rule to a batch of observations
// laid out row-major [len(done), ObsDim] and writes one flag per row.
func (t *Task) DoneBatch(obs []float32, done []bool) error {
	if len(obs) != len(done)*t.ObsDim {
		return fmt.Errorf("envs: %s DoneBatch: %d values for %d rows of %d", t.Name, len(obs), len(done), t.ObsDim)
	}
	if t.Done == nil {
		return fmt.Errorf("envs: %s has no termination rule on observations", t.Name)
	}
	for i := range done {
		done[i] = t.Done(obs[i*t.ObsDim : (i+1)*t.ObsDim])
	}
	return nil
}

// --- observations, positions and resets shared by the tasks ------------------

// observe writes qpos[obsSkip:] followed by qvel, velocities clipped to
// ±velClip when velClip > 0.
func (t *Task) observe(s *sim, obs []float64) {
	n := copy(obs, s.qpos[t.obsSkip:])
	for i, v := range s.qvel {
		if t.velClip > 0 {
			v = math.Max(-t.velClip, math.Min(t.velClip, v))
		}
		obs[n+i] = v
	}
}

func rootX(s *sim) float64 { return s.qpos[0] }

// massCentreX is the mass-weighted x of all bodies' centres of mass, as
// MuJoCo last computed them (like Gymnasium, read right after mj_step).
func massCentreX(s *sim) float64 {
	var mx, m float64
	for b := 0; b < s.nbody; b++ {
		mx += s.bodyMass[b] * s.xipos[3*b]
		m += s.bodyMass[b]
	}
	return mx / m
}

// uniformNoise perturbs qpos and qvel by U(-scale, scale).
func uniformNoise(scale float64) func(s *sim, rng *rand.Rand) {
	return func(s *sim, rng *rand.Rand) {
		for i := range s.qpos {
			s.qpos[i] = s.qpos0[i] + scale*(2*rng.Float64()-1)
		}
		for i := range s.qvel {
			s.qvel[i] = scale * (2*rng.Float64() - 1)
		}
	}
}

// uniformPosNormalVel perturbs qpos by U(-scale, scale) and sets qvel to scale·N(0,1).
func uniformPosNormalVel(scale float64) func(s *sim, rng *rand.Rand) {
	return func(s *sim, rng *rand.Rand) {
		for i := range s.qpos {
			s.qpos[i] = s.qpos0[i] + scale*(2*rng.Float64()-1)
		}
		for i := range s.qvel {
			s.qvel[i] = scale * rng.NormFloat64()
		}
	}
}

// atMost32 is the greatest float32 not above b: for a float32 x,
// float64(x) <= b exactly when x <= atMost32(b).
func atMost32(b float64) float32 {
	f, _ := bound32(b, false, true)
	return f
}

// bound32 converts a float64 bound b on a float32 value x into a float32
// bound and inclusive flag that decide the same: for a lower bound
// (lower), b < x (b <= x if incl) in float64; for an upper one, x < b
// (x <= b). A bound float32 represents (±Inf included) keeps its flag;
// another becomes the nearest float32 inside the range, inclusive
// (±MaxFloat32 or ±Inf for bounds beyond float32's range).
func bound32(b float64, lower, incl bool) (float32, bool) {
	f := float32(b)
	if float64(f) == b {
		return f, incl
	}
	if lower && float64(f) < b {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	} else if !lower && float64(f) > b {
		f = math.Nextafter32(f, float32(math.Inf(-1)))
	}
	return f, true
}

func allFinite64(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// --- the tasks -----------------------------------------------------------------

func init() {
	register(&Task{
		Name: "hopper", Model: "hopper.xml", FrameSkip: 4, ObsDim: 11, ActDim: 3,
		Summary: "one-legged hopper, 2-D; obs qpos[1:] + clip(qvel, ±10)",
		Forward: 1, Healthy: 1, CtrlCost: 1e-3,
		resetNoise: uniformNoise(5e-3), obsSkip: 1, velClip: 10, xPosition: rootX,
		isHealthy: func(qpos, qvel []float64) bool {
			for _, v := range qpos[2:] {
				if !(v > -100 && v < 100) {
					return false
				}
			}
			for _, v := range qvel {
				if !(v > -100 && v < 100) {
					return false
				}
			}
			return qpos[1] > 0.7 && qpos[2] > -0.2 && qpos[2] < 0.2
		},
		// The corrected rule: all |obs[1:]| < 100 (not abs of a boolean).
		Done: func(o []float32) bool {
			if !stats.Finite(o) {
				return true
			}
			for _, v := range o[1:] {
				if !(v > -100 && v < 100) {
					return true
				}
			}
			return !(o[0] > 0.7 && o[1] > -0.2 && o[1] < 0.2)
		},
		DoneSpec: &rollout.DoneSpec{Finite: true, Ranges: []rollout.Range{
			{Dim: 1, ToEnd: true, Lo: -100, Hi: 100, HasLo: true, HasHi: true},
			{Dim: 0, Lo: 0.7, HasLo: true},
			{Dim: 1, Lo: -0.2, Hi: 0.2, HasLo: true, HasHi: true},
		}},
	})
	register(&Task{
		Name: "walker2d", Model: "walker2d.xml", FrameSkip: 4, ObsDim: 17, ActDim: 6,
		Summary: "two-legged walker, 2-D; obs qpos[1:] + clip(qvel, ±10)",
		Forward: 1, Healthy: 1, CtrlCost: 1e-3,
		resetNoise: uniformNoise(5e-3), obsSkip: 1, velClip: 10, xPosition: rootX,
		isHealthy: func(qpos, qvel []float64) bool {
			return qpos[1] > 0.8 && qpos[1] < 2.0 && qpos[2] > -1 && qpos[2] < 1
		},
		Done: func(o []float32) bool {
			return !(o[0] > 0.8 && o[0] < 2.0 && o[1] > -1 && o[1] < 1)
		},
		DoneSpec: &rollout.DoneSpec{Ranges: []rollout.Range{
			{Dim: 0, Lo: 0.8, Hi: 2.0, HasLo: true, HasHi: true},
			{Dim: 1, Lo: -1, Hi: 1, HasLo: true, HasHi: true},
		}},
	})
	register(&Task{
		Name: "halfcheetah", Model: "half_cheetah.xml", FrameSkip: 5, ObsDim: 17, ActDim: 6,
		Summary: "planar cheetah, never terminates; obs qpos[1:] + qvel",
		Forward: 1, Healthy: 0, CtrlCost: 0.1,
		resetNoise: uniformPosNormalVel(0.1), obsSkip: 1, velClip: 0, xPosition: rootX,
		isHealthy: func(qpos, qvel []float64) bool { return true },
		Done:      func(o []float32) bool { return false },
		DoneSpec:  &rollout.DoneSpec{}, // never
	})
	register(&Task{
		Name: "ant", Model: "ant.xml", FrameSkip: 5, ObsDim: 27, ActDim: 8,
		Summary: "quadruped, 3-D; truncated obs qpos[2:] + qvel (no contact forces)",
		Forward: 1, Healthy: 1, CtrlCost: 0.5,
		// The torso's free joint x (qpos[0]) is its frame position. Gymnasium
		// reads the body position after mj_step, which lags one physics step;
		// admpo uses the state itself.
		resetNoise: uniformPosNormalVel(0.1), obsSkip: 2, velClip: 0, xPosition: rootX,
		isHealthy: func(qpos, qvel []float64) bool {
			return allFinite64(qpos) && allFinite64(qvel) && qpos[2] >= 0.2 && qpos[2] <= 1.0
		},
		Done: func(o []float32) bool { return !(stats.Finite(o) && o[0] >= 0.2 && o[0] <= 1.0) },
		DoneSpec: &rollout.DoneSpec{Finite: true, Ranges: []rollout.Range{
			{Dim: 0, Lo: 0.2, Hi: 1.0, HasLo: true, HasHi: true, LoIncl: true, HiIncl: true},
		}},
	})
	register(&Task{
		Name: "humanoid", Model: "humanoid.xml", FrameSkip: 5, ObsDim: 45, ActDim: 17,
		Summary: "3-D humanoid; truncated obs qpos[2:] + qvel, reward 1.25·dx_com/dt",
		Forward: 1.25, Healthy: 5, CtrlCost: 0.1,
		resetNoise: uniformNoise(1e-2), obsSkip: 2, velClip: 0, xPosition: massCentreX,
		isHealthy: func(qpos, qvel []float64) bool { return qpos[2] > 1.0 && qpos[2] < 2.0 },
		Done:      func(o []float32) bool { return !(o[0] > 1.0 && o[0] < 2.0) },
		DoneSpec: &rollout.DoneSpec{Ranges: []rollout.Range{
			{Dim: 0, Lo: 1.0, Hi: 2.0, HasLo: true, HasHi: true},
		}},
	})
	register(&Task{
		Name: "inverted-pendulum", Model: "inverted_pendulum.xml", FrameSkip: 2, ObsDim: 4, ActDim: 1,
		Summary:    "cart-pole balance, +1 per step; obs qpos + qvel",
		constant:   1,
		resetNoise: uniformNoise(0.01), obsSkip: 0, velClip: 0, xPosition: rootX,
		isHealthy: func(qpos, qvel []float64) bool {
			return allFinite64(qpos) && allFinite64(qvel) && math.Abs(qpos[1]) <= 0.2
		},
		Done: func(o []float32) bool { return !(stats.Finite(o) && math.Abs(float64(o[1])) <= 0.2) },
		// Done compares in float64: |o| <= 0.2 is |o| <= the float32 just below 0.2.
		DoneSpec: &rollout.DoneSpec{Finite: true, Ranges: []rollout.Range{
			{Dim: 1, Abs: true, Hi: atMost32(0.2), HasHi: true, HiIncl: true},
		}},
	})
}
