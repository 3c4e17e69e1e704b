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
//
// Update reads nothing back: on a device it only queues the work, and
// Stats, which the Agent calls only when its LastStats is asked for, is
// the one read-back of the losses (a device synchronisation).
type Learner interface {
	// Update does one SAC update on b with the target's noise epsNext and
	// the actor step's eps, the actor's learning rate actorLR, and tells
	// whether it stepped the actor and α (the ActorEvery schedule).
	Update(b *buffer.Batch, epsNext, eps []float32, actorLR float64) (actorUpdated bool, err error)
	// Stats reads back the last update's Stats (ActorLR aside, which the
	// Agent fills in), with ActorLoss, AlphaLoss and LogPi those of the
	// learner's last actor step (0 before its first). The Agent calls it
	// at most once per update.
	Stats() (Stats, error)
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
// host after copying l's state (and the last update's Stats) back.
func (s *Agent) SetLearner(l Learner) error {
	if s.learner != nil {
		if err := s.Sync(); err != nil {
			return err
		}
		if _, err := s.LastStats(); err != nil {
			return err
		}
	}
	s.learner, s.actorStale, s.stateStale, s.learnerActed = nil, false, false, false
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
// update draws it, into the same slices. It reads no Stats back
// (LastStats does, when asked).
func (s *Agent) learnerUpdate(b *buffer.Batch, epsNext, eps []float32) (bool, error) {
	if b.N != s.Cfg.BatchSize || b.ObsDim != s.Actor.ObsDim || b.ActDim != s.Actor.ActDim {
		return false, fmt.Errorf("sac: batch of %d×%d/%d, want %d×%d/%d", b.N, b.ObsDim, b.ActDim,
			s.Cfg.BatchSize, s.Actor.ObsDim, s.Actor.ActDim)
	}
	lr := s.Cfg.ActorLRAt(s.Updates)
	due := s.actorDue()
	actor, err := s.learner.Update(b, epsNext, eps, lr)
	if err != nil {
		return false, fmt.Errorf("sac: update %d: %w", s.Updates+1, err)
	}
	if actor != due {
		return false, errors.New("sac: the learner's actor schedule differs from the agent's")
	}
	s.Updates++
	s.stateStale, s.statsUnread, s.lastActor = true, true, actor
	if actor {
		s.ActorOpt.LR, s.lastActorLR = lr, lr
		s.actorStale, s.learnerActed = true, true
	}
	return actor, nil
}

// LastStats returns the last update's Stats. When that update skipped the
// actor (ActorUpdated false), ActorLoss, AlphaLoss, LogPi and ActorLR are
// those of the agent's last update that stepped it (0 before the first).
// Before any update it returns zero Stats.
//
// On the host the update computed them already. With a Learner the first
// call after an update reads them back (Learner.Stats: on a device, a
// synchronisation that waits for the queued updates) and later calls
// return that copy until the next update: a training loop that asks only
// when it logs, evaluates or writes a checkpoint reads them back once per
// such point, not once per update, and gets the same values as if it had
// read them after every update.
func (s *Agent) LastStats() (Stats, error) {
	if s.learner == nil || !s.statsUnread {
		return s.last, nil
	}
	st, err := s.learner.Stats()
	if err != nil {
		return s.last, fmt.Errorf("sac: stats of update %d: %w", s.Updates, err)
	}
	if st.ActorUpdated != s.lastActor {
		return s.last, errors.New("sac: the learner's stats are of another update than the agent's last")
	}
	if s.learnerActed {
		st.ActorLR = s.lastActorLR
	} else { // no actor step on this learner yet: keep the host's last one
		st = s.withLastActorStep(st)
	}
	s.last, s.statsUnread = st, false
	return st, nil
}
