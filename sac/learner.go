package sac

import (
	"errors"
	"fmt"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/models"
)

// Learner runs an Agent's gradient updates elsewhere (package train's
// device learner); the Agent keeps drawing the noise, counting updates and
// acting on the host. Tensors are in models' order: each network's W0, B0,
// W1, B1, ... and the critics' optimiser over critic 1's then critic 2's.
type Learner interface {
	// Update does one SAC update on b with the target's noise epsNext and
	// the actor step's eps, the actor's learning rate actorLR.
	Update(b *buffer.Batch, epsNext, eps []float32, actorLR float64) (Stats, error)
	// PullActor copies the learner's actor weights into dst (models'
	// order).
	PullActor(dst [][]float32) error
	// Pull copies the learner's whole state into st; Push sets it.
	Pull(st *State) error
	Push(st *State) error
}

// State is an Agent's trainable state as views of its host slices: the
// weights, log α, the optimisers' moments and step counts, and the update
// count.
type State struct {
	Actor, Critic1, Critic2, Target1, Target2 [][]float32
	LogAlpha                                  []float32 // one value
	ActorOpt, CriticOpt, AlphaOpt             *models.Adam
	Updates                                   int
}

func mlpViews(m *models.MLP) [][]float32 {
	var ps [][]float32
	for i := range m.Layers {
		ps = append(ps, m.Layers[i].W, m.Layers[i].B)
	}
	return ps
}

// state returns views of s's host state.
func (s *Agent) state() *State {
	return &State{Actor: mlpViews(&s.Actor.Net), Critic1: mlpViews(&s.Critic1.Net), Critic2: mlpViews(&s.Critic2.Net),
		Target1: mlpViews(&s.Target1.Net), Target2: mlpViews(&s.Target2.Net), LogAlpha: s.LogAlpha,
		ActorOpt: s.ActorOpt, CriticOpt: s.CriticOpt, AlphaOpt: s.AlphaOpt, Updates: s.Updates}
}

// SetLearner makes l run the agent's updates from now on, starting from
// the agent's current state (pushed to l now); nil returns them to the
// host after copying l's state back.
func (s *Agent) SetLearner(l Learner) error {
	if s.learner != nil {
		if err := s.Sync(); err != nil {
			return err
		}
	}
	s.learner, s.actorStale, s.stateStale = nil, false, false
	if l == nil {
		return nil
	}
	if err := l.Push(s.state()); err != nil {
		return fmt.Errorf("sac: set learner: %w", err)
	}
	s.learner = l
	return nil
}

// Sync copies a learner's state back to the host (the weights, targets,
// log α and optimisers), where updates ran since the last Sync; Save and
// export need it first. Without a learner it does nothing.
func (s *Agent) Sync() error {
	if s.learner == nil || !s.stateStale {
		return nil
	}
	st := s.state()
	if err := s.learner.Pull(st); err != nil {
		return fmt.Errorf("sac: sync: %w", err)
	}
	if st.Updates != s.Updates {
		return fmt.Errorf("sac: sync: the learner did %d updates, the agent counts %d", st.Updates, s.Updates)
	}
	s.stateStale, s.actorStale = false, false
	return nil
}

// HostActor returns the actor with the learner's latest weights (for
// export).
func (s *Agent) HostActor() (*models.Actor, error) {
	if err := s.syncActor(); err != nil {
		return nil, err
	}
	return s.Actor, nil
}

// syncActor copies the learner's actor to the host where updates changed
// it since the last copy: once per env step or roll-out, not per update.
func (s *Agent) syncActor() error {
	if s.learner == nil || !s.actorStale {
		return nil
	}
	if err := s.learner.PullActor(mlpViews(&s.Actor.Net)); err != nil {
		return fmt.Errorf("sac: actor copy-back: %w", err)
	}
	s.actorStale = false
	return nil
}

// learnerUpdate is Update on the learner: the noise is drawn as the host
// update draws it, into the same slices.
func (s *Agent) learnerUpdate(b *buffer.Batch, epsNext, eps []float32) (Stats, error) {
	var st Stats
	if b.N != s.Cfg.BatchSize || b.ObsDim != s.Actor.ObsDim || b.ActDim != s.Actor.ActDim {
		return st, fmt.Errorf("sac: batch of %d×%d/%d, want %d×%d/%d", b.N, b.ObsDim, b.ActDim,
			s.Cfg.BatchSize, s.Actor.ObsDim, s.Actor.ActDim)
	}
	lr := s.Cfg.ActorLRAt(s.Updates)
	st, err := s.learner.Update(b, epsNext, eps, lr)
	if err != nil {
		return st, fmt.Errorf("sac: update %d: %w", s.Updates+1, err)
	}
	if st.ActorUpdated != s.actorDue() {
		return st, errors.New("sac: the learner's actor schedule differs from the agent's")
	}
	s.Updates++
	s.stateStale = true
	if st.ActorUpdated {
		s.ActorOpt.LR, st.ActorLR = lr, lr
		s.actorStale = true
	}
	return st, nil
}
