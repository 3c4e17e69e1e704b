package experiments

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/policies"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/sac"
)

// BatchActor chooses actions for a batch of observations in model
// roll-outs. Its float32 actions go back into the model as they are, so it
// is not envs.Actor (one observation in a task, float64 actions): a
// uniform action here is rounded to float32 before the true step too.
type BatchActor interface {
	// Name labels the policy in tables and plots.
	Name() string
	// Act writes actions for the n = len(obs)/obsDim observations into out.
	Act(obs []float32, rng *rand.Rand, out []float32) error
}

// UniformActor draws every action uniformly within the bounds.
type UniformActor struct{ Low, High []float64 }

// Name is "random".
func (UniformActor) Name() string { return "random" }

// Act draws uniform actions.
func (u UniformActor) Act(_ []float32, rng *rand.Rand, out []float32) error {
	ad := len(u.Low)
	if ad == 0 || len(out)%ad != 0 {
		return fmt.Errorf("experiments: uniform actor with %d bounds for %d outputs", ad, len(out))
	}
	for i := range out {
		j := i % ad
		out[i] = float32(u.Low[j] + rng.Float64()*(u.High[j]-u.Low[j]))
	}
	return nil
}

// ONNXActor acts with an exported SAC actor through ONNX Runtime: sampled
// actions (standard normal noise from rng) or, when Deterministic, the mean.
type ONNXActor struct {
	P             *infer.Policy
	Deterministic bool
	Label         string
}

// Name is the actor's label.
func (a *ONNXActor) Name() string { return a.Label }

// Act runs the actor.
func (a *ONNXActor) Act(obs []float32, rng *rand.Rand, out []float32) error {
	var noise []float32
	if !a.Deterministic {
		noise = make([]float32, len(out))
		for i := range noise {
			noise[i] = float32(rng.NormFloat64())
		}
	}
	return a.P.Act(obs, noise, out)
}

// GoActor runs a SAC actor's deterministic action (Scale·tanh(mean) + Bias)
// in plain Go: the behaviour-cloned policy.
type GoActor struct {
	A     *models.Actor
	Label string
	s     models.Scratch
}

// Name is the actor's label.
func (g *GoActor) Name() string { return g.Label }

// Act computes the deterministic actions.
func (g *GoActor) Act(obs []float32, _ *rand.Rand, out []float32) error {
	od, ad := g.A.ObsDim, g.A.ActDim
	n := len(obs) / od
	if n*od != len(obs) || len(out) != n*ad {
		return fmt.Errorf("experiments: actor got %d observation and %d action values (obs %d, act %d)", len(obs), len(out), od, ad)
	}
	y, err := models.MLPForward(&g.A.Net, obs, n, &g.s)
	if err != nil {
		return err
	}
	for r := 0; r < n; r++ {
		for j := 0; j < ad; j++ {
			out[r*ad+j] = g.A.Scale[j]*float32(math.Tanh(float64(y[r*2*ad+j]))) + g.A.Bias[j]
		}
	}
	return nil
}

// LoadPolicyONNX reads a trained policy: an ONNX actor file, a run
// directory holding policy.onnx, or a deployable bundle (checked against
// its manifest).
func LoadPolicyONNX(path string) ([]byte, string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, "", fmt.Errorf("experiments: policy: %w", err)
	}
	if !st.IsDir() {
		b, err := os.ReadFile(path)
		return b, path, err
	}
	if _, err := os.Stat(filepath.Join(path, policies.ManifestFile)); err == nil {
		b, err := policies.ReadBundle(path)
		if err != nil {
			return nil, "", err
		}
		return b.Policy, path + " (bundle)", nil
	}
	p := rundir.Dir(path).Policy()
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, "", fmt.Errorf("experiments: %s holds no policy.onnx or bundle manifest: %w", path, err)
	}
	return b, p, nil
}

// TrainBC clones the data set's behaviour: a 256x256 SAC actor trained with
// sac.BC (MSE between its deterministic action and the data set's) for
// steps Adam updates of batch rows. It returns the actor and the mean loss
// of the last 100 updates.
func TrainBC(d *datasets.Dataset, low, high []float64, steps, batch int, lr float64, seed int64) (*models.Actor, float64, error) {
	replay, err := buffer.FromDataset(d, seed+11)
	if err != nil {
		return nil, 0, err
	}
	actor := models.NewActor(d.ObsDim, low, high, []int{256, 256}, rand.New(rand.NewSource(seed+12)))
	bc, err := sac.NewBC(actor, batch, lr)
	if err != nil {
		return nil, 0, err
	}
	defer bc.Close()
	b := buffer.NewBatch(batch, d.ObsDim, d.ActDim)
	var tail float64
	var nTail int
	for i := 0; i < steps; i++ {
		if err := replay.Sample(b); err != nil {
			return nil, 0, err
		}
		loss, err := bc.Update(b)
		if err != nil {
			return nil, 0, fmt.Errorf("experiments: BC update %d: %w", i, err)
		}
		if i >= steps-100 {
			tail += loss
			nTail++
		}
	}
	return actor, tail / math.Max(float64(nTail), 1), nil
}
