package infer

import (
	"fmt"
	"strconv"

	"github.com/admpo/admpo/internal/stats"
	"github.com/admpo/admpo/onnx/schema"
	ort "github.com/yalue/onnxruntime_go"
)

// Policy runs an exported SAC actor: inputs obs [batch, obs_dim] and noise
// [batch, act_dim], outputs action (the stochastic action for that noise) and
// mean_action (the deterministic one).
type Policy struct {
	sess           *Session
	ObsDim, ActDim int
	zeros, spare   []float32
}

// OpenPolicy loads an actor exported by admpo's onnx package.
func OpenPolicy(model []byte, opts Options) (*Policy, error) {
	sig := schema.Actor()
	s, err := Open(model, sig.Inputs, sig.Outputs, opts)
	if err != nil {
		return nil, fmt.Errorf("%w (opening the policy)", err)
	}
	od, err1 := MetaInt(s.meta, schema.MetaObsDim)
	ad, err2 := MetaInt(s.meta, schema.MetaActDim)
	if err1 != nil || err2 != nil {
		s.Close()
		return nil, fmt.Errorf("infer: policy metadata: obs_dim/act_dim missing or bad (%v, %v)", err1, err2)
	}
	return &Policy{sess: s, ObsDim: od, ActDim: ad}, nil
}

// MetaInt reads the metadata_prop key of an admpo ONNX graph as a positive
// integer (obs_dim, act_dim, m, ...); a missing key or a value that is not a
// positive integer is an error naming the key.
func MetaInt(meta map[string]string, key string) (int, error) {
	v, ok := meta[key]
	if !ok {
		return 0, fmt.Errorf("no %q", key)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q=%q is not a positive integer", key, v)
	}
	return n, nil
}

// Metadata returns the actor's metadata_props.
func (p *Policy) Metadata() map[string]string { return p.sess.meta }

// Act computes actions for n = len(obs)/ObsDim observations into out
// [n, ActDim]. With noise == nil the deterministic (mean) action is
// returned; otherwise noise [n, ActDim] holds standard normal draws.
func (p *Policy) Act(obs, noise, out []float32) error {
	if len(obs) == 0 || len(obs)%p.ObsDim != 0 {
		return fmt.Errorf("infer: policy: %d observation values is not a positive multiple of obs_dim %d", len(obs), p.ObsDim)
	}
	n := len(obs) / p.ObsDim
	if len(out) != n*p.ActDim {
		return fmt.Errorf("infer: policy: output has %d values, want %d", len(out), n*p.ActDim)
	}
	if i := stats.FirstNonFinite(obs); i >= 0 {
		return fmt.Errorf("infer: policy: observation %d value %d is %v", i/p.ObsDim, i%p.ObsDim, obs[i])
	}
	det := noise == nil
	if det {
		if len(p.zeros) < n*p.ActDim {
			p.zeros = make([]float32, n*p.ActDim)
		}
		noise = p.zeros[:n*p.ActDim]
	} else if len(noise) != n*p.ActDim {
		return fmt.Errorf("infer: policy: noise has %d values, want %d", len(noise), n*p.ActDim)
	}
	var ts tensors
	defer ts.destroy()
	in0, err := wrap(&ts, obs, n, p.ObsDim)
	if err != nil {
		return err
	}
	in1, err := wrap(&ts, noise, n, p.ActDim)
	if err != nil {
		return err
	}
	o, err := wrap(&ts, out, n, p.ActDim)
	if err != nil {
		return err
	}
	if len(p.spare) < n*p.ActDim {
		p.spare = make([]float32, n*p.ActDim)
	}
	other, err := wrap(&ts, p.spare[:n*p.ActDim], n, p.ActDim)
	if err != nil {
		return err
	}
	if det {
		return p.sess.Run([]ort.Value{in0, in1}, []ort.Value{other, o})
	}
	return p.sess.Run([]ort.Value{in0, in1}, []ort.Value{o, other})
}

// Close frees the session.
func (p *Policy) Close() { p.sess.Close() }

// wrap makes a tensor over data (no copy) with the given shape.
func wrap[T ort.TensorData](ts *tensors, data []T, dims ...int) (*ort.Tensor[T], error) {
	shape := make([]int64, len(dims))
	for i, d := range dims {
		shape[i] = int64(d)
	}
	x, err := ort.NewTensor(ort.NewShape(shape...), data)
	if err != nil {
		return nil, fmt.Errorf("infer: tensor %v: %w", shape, err)
	}
	ts.vals = append(ts.vals, x)
	return x, nil
}

// f32Buf is a float32 buffer and the shape of the tensor over it.
type f32Buf struct {
	data []float32
	dims []int
}

// wrapAll appends to vals a tensor over each buffer (no copy), in order.
func wrapAll(ts *tensors, vals []ort.Value, bufs ...f32Buf) ([]ort.Value, error) {
	for _, b := range bufs {
		t, err := wrap(ts, b.data, b.dims...)
		if err != nil {
			return nil, err
		}
		vals = append(vals, t)
	}
	return vals, nil
}
