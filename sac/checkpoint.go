package sac

import (
	"fmt"

	"github.com/admpo/admpo/internal/ckpt"
	"github.com/admpo/admpo/models"
)

// putMLP stores every layer of m under prefix.
func putMLP(f *ckpt.File, prefix string, m *models.MLP) {
	for i := range m.Layers {
		f.PutF32(fmt.Sprintf("%s/%d/w", prefix, i), m.Layers[i].W)
		f.PutF32(fmt.Sprintf("%s/%d/b", prefix, i), m.Layers[i].B)
	}
}

// loadMLP copies the layers stored under prefix into m's existing slices
// (which Gorgonia graphs may be backed by), checking every size.
func loadMLP(f *ckpt.File, prefix string, m *models.MLP) error {
	for i := range m.Layers {
		if err := f.CopyF32(fmt.Sprintf("%s/%d/w", prefix, i), m.Layers[i].W); err != nil {
			return err
		}
		if err := f.CopyF32(fmt.Sprintf("%s/%d/b", prefix, i), m.Layers[i].B); err != nil {
			return err
		}
	}
	return nil
}

// putCount stores a counter as a one-value section.
func putCount(f *ckpt.File, name string, n int) { f.PutF32(name, []float32{float32(n)}) }

// loadCount sets *n to the counter that putCount stored (left as it is on
// an error).
func loadCount(f *ckpt.File, name string, n *int) error {
	v, err := f.F32(name, 1)
	if err != nil {
		return err
	}
	*n = int(v[0])
	return nil
}

// putAdam stores an optimiser's moments and step count.
func putAdam(f *ckpt.File, prefix string, a *models.Adam) {
	putCount(f, prefix+"/t", a.T)
	for i := range a.M {
		f.PutF32(fmt.Sprintf("%s/m/%d", prefix, i), a.M[i])
		f.PutF32(fmt.Sprintf("%s/v/%d", prefix, i), a.V[i])
	}
}

// loadAdam restores what putAdam stored.
func loadAdam(f *ckpt.File, prefix string, a *models.Adam) error {
	if err := loadCount(f, prefix+"/t", &a.T); err != nil {
		return err
	}
	for i := range a.M {
		if err := f.CopyF32(fmt.Sprintf("%s/m/%d", prefix, i), a.M[i]); err != nil {
			return err
		}
		if err := f.CopyF32(fmt.Sprintf("%s/v/%d", prefix, i), a.V[i]); err != nil {
			return err
		}
	}
	return nil
}

// Save stores the networks, target critics, entropy coefficient, optimisers
// and update count in sections sac/actor/<layer>/{w,b}, sac/critic1, sac/critic2,
// sac/target1, sac/target2, sac/log_alpha, sac/opt/{actor,critic,alpha} and
// sac/updates. The noise source is not stored. With a learner, Sync must
// come first.
func (s *Agent) Save(f *ckpt.File) {
	putMLP(f, "sac/actor", &s.Actor.Net)
	putMLP(f, "sac/critic1", &s.Critic1.Net)
	putMLP(f, "sac/critic2", &s.Critic2.Net)
	putMLP(f, "sac/target1", &s.Target1.Net)
	putMLP(f, "sac/target2", &s.Target2.Net)
	f.PutF32("sac/log_alpha", s.LogAlpha)
	putAdam(f, "sac/opt/actor", s.ActorOpt)
	putAdam(f, "sac/opt/critic", s.CriticOpt)
	putAdam(f, "sac/opt/alpha", s.AlphaOpt)
	putCount(f, "sac/updates", s.Updates)
}

// Load restores what Save stored into the agent's existing weights,
// checking every size, and pushes them to the learner, if one is set.
func (s *Agent) Load(f *ckpt.File) error {
	if err := s.load(f); err != nil {
		return err
	}
	if s.learner != nil {
		s.actorStale, s.stateStale = false, false
		if err := s.learner.Push(s.state()); err != nil {
			return fmt.Errorf("sac: load: %w", err)
		}
	}
	return nil
}

func (s *Agent) load(f *ckpt.File) error {
	for _, x := range []struct {
		p string
		m *models.MLP
	}{{"sac/actor", &s.Actor.Net}, {"sac/critic1", &s.Critic1.Net}, {"sac/critic2", &s.Critic2.Net},
		{"sac/target1", &s.Target1.Net}, {"sac/target2", &s.Target2.Net}} {
		if err := loadMLP(f, x.p, x.m); err != nil {
			return err
		}
	}
	if err := f.CopyF32("sac/log_alpha", s.LogAlpha); err != nil {
		return err
	}
	for _, x := range []struct {
		p string
		a *models.Adam
	}{{"sac/opt/actor", s.ActorOpt}, {"sac/opt/critic", s.CriticOpt}, {"sac/opt/alpha", s.AlphaOpt}} {
		if err := loadAdam(f, x.p, x.a); err != nil {
			return err
		}
	}
	return loadCount(f, "sac/updates", &s.Updates)
}
