package buffer

import (
	"encoding/json"
	"fmt"

	"github.com/admpo/admpo/internal/ckpt"
)

// replayState is the JSON part of a saved replay buffer.
type replayState struct {
	ObsDim, ActDim, Cap, N, Pos int
}

func boolsToF32(b []bool) []float32 {
	v := make([]float32, len(b))
	for i, x := range b {
		if x {
			v[i] = 1
		}
	}
	return v
}

// Save stores the buffer under prefix: the JSON counters in
// <prefix>/state and the transitions in <prefix>/{obs,act,next,rew,terminal,end}
// as float32 sections (flags as 0/1). The sampling source is not stored.
func (r *Replay) Save(f *ckpt.File, prefix string) error {
	st, _ := json.Marshal(replayState{r.ObsDim, r.ActDim, r.Cap, r.n, r.pos})
	f.PutBytes(prefix+"/state", st)
	f.PutF32(prefix+"/obs", r.obs)
	f.PutF32(prefix+"/act", r.act)
	f.PutF32(prefix+"/next", r.next)
	f.PutF32(prefix+"/rew", r.rew)
	f.PutF32(prefix+"/terminal", boolsToF32(r.terminal))
	f.PutF32(prefix+"/end", boolsToF32(r.end))
	return nil
}

// Load rebuilds a buffer saved by Save. It samples with a fresh source
// until SetRand gives it one.
func Load(f *ckpt.File, prefix string) (*Replay, error) {
	b, err := f.Bytes(prefix + "/state")
	if err != nil {
		return nil, err
	}
	var st replayState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("buffer: checkpoint %s: %w", prefix, err)
	}
	r, err := New(st.ObsDim, st.ActDim, st.Cap, 0)
	if err != nil {
		return nil, err
	}
	if st.N < 0 || st.N > st.Cap || st.Pos < 0 || st.Pos >= st.Cap {
		return nil, fmt.Errorf("buffer: checkpoint %s: bad counters n=%d pos=%d cap=%d", prefix, st.N, st.Pos, st.Cap)
	}
	r.n, r.pos = st.N, st.Pos
	for _, x := range []struct {
		n string
		d []float32
	}{{"obs", r.obs}, {"act", r.act}, {"next", r.next}, {"rew", r.rew}} {
		if err := f.CopyF32(prefix+"/"+x.n, x.d); err != nil {
			return nil, err
		}
	}
	for _, x := range []struct {
		n string
		d []bool
	}{{"terminal", r.terminal}, {"end", r.end}} {
		v, err := f.F32(prefix+"/"+x.n, len(x.d))
		if err != nil {
			return nil, err
		}
		for i := range v {
			x.d[i] = v[i] != 0
		}
	}
	return r, nil
}
