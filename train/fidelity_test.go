package train

import (
	"context"
	"encoding/json"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/buffer"
	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/internal/bitexact"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/rundir"
	"github.com/admpo/admpo/sac"
)

// The tests of this file check admpo's paper presets and loops against the
// authors' reference code (HxLyn3/ADMPO), whose formulas and config values
// are written out here; docs/fidelity.md lists the settings.

// authorsRolloutLen is the authors' make_rollout_len (runner/online_trainer.py):
// int(min(max(x + (it-a)/(b-a)*(y-x), x), y)) at learning step it.
func authorsRolloutLen(a, b, x, y, it int) int {
	v := float64(x) + float64(it-a)/float64(b-a)*float64(y-x)
	return int(math.Min(math.Max(v, float64(x)), float64(y)))
}

// Item 1: --steps counts learning steps after the warm-up, and the
// roll-out schedule reads the learning step (0 at the first learning step).
func TestStepsCountAfterWarmUpAndScheduleReadsLearningStep(t *testing.T) {
	for _, env := range []string{"hopper", "walker2d", "ant", "humanoid"} {
		c, err := Preset("paper", env, "admpo", 3)
		if err != nil {
			t.Fatal(err)
		}
		authorsSteps := map[string]int{"hopper": 50000, "walker2d": 200000, "ant": 300000, "humanoid": 300000}[env]
		if c.Steps != authorsSteps || c.WarmUp != 5000 || c.TotalSteps() != 5000+authorsSteps {
			t.Errorf("%s: steps %d warm-up %d total %d, want n_steps %d after 5000 warm-up", env, c.Steps, c.WarmUp, c.TotalSteps(), authorsSteps)
		}
		s := c.Rollout
		for _, envStep := range []int{5000, 5250, 15000, 30000, 55000, 105000, 200000} {
			it := envStep - 5000 // the authors' loop counter after _warm_up
			if got, want := s.At(c.ScheduleStep(envStep)), authorsRolloutLen(s.A, s.B, s.From, s.To, it); got != want {
				t.Errorf("%s: roll-out length at env step %d (learning step %d) %d, authors %d", env, envStep, it, got, want)
			}
		}
	}
	// A run: the first model round (at the end of the warm-up) uses the
	// length at learning step 0, and the run takes warm-up + steps env steps.
	c := tinyConfig("admpo")
	c.Steps, c.Rollout = 100, Schedule{0, 100, 1, 3} // length 1 at learning step 0, 3 at env step 200 (the old reading)
	o, err := NewOnline(c, filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.RunTo(context.Background(), c.WarmUp+1); err != nil {
		t.Fatal(err)
	}
	if o.rolloutLen != authorsRolloutLen(0, 100, 1, 3, 0) {
		t.Errorf("first roll-out length %d, want the authors' %d at learning step 0", o.rolloutLen, authorsRolloutLen(0, 100, 1, 3, 0))
	}
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if o.Step() != 200+100 || o.real.Len() != 300 {
		t.Errorf("run ended at env step %d with %d real transitions, want 200 warm-up + 100 steps", o.Step(), o.real.Len())
	}
}

// Item 2: with actor_every N the actor and alpha change only on every N-th
// critic update (the authors' critic_cnt % actor_freq == 0), the critics and
// targets on every one.
func TestActorEveryUpdatesActorOnEveryNthCriticUpdate(t *testing.T) {
	cfg := sac.DefaultConfig(2)
	cfg.Hidden, cfg.BatchSize, cfg.ActorEvery, cfg.InitAlpha = []int{16, 16}, 8, 3, 1
	s, err := sac.New(3, []float64{-1, -1}, []float64{1, 1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewSource(2))
	b := buffer.NewBatch(8, 3, 2)
	for i := range b.Obs {
		b.Obs[i], b.NextObs[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	for i := range b.Act {
		b.Act[i] = float32(2*rng.Float64() - 1)
	}
	for i := range b.Rew {
		b.Rew[i] = float32(rng.NormFloat64())
	}
	flat := func(m *models.MLP) []float32 {
		var v []float32
		for _, l := range m.Layers {
			v = append(v, l.W...)
		}
		return v
	}
	differs := func(a, b []float32) bool {
		for i := range a {
			if a[i] != b[i] {
				return true
			}
		}
		return false
	}
	var lastActor sac.Stats // the last actor step's stats
	for cnt := 1; cnt <= 7; cnt++ {
		actor, critic, target, alpha := flat(&s.Actor.Net), flat(&s.Critic1.Net), flat(&s.Target1.Net), s.LogAlpha[0]
		stepped, err := s.Update(b)
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.LastStats()
		if err != nil {
			t.Fatal(err)
		}
		due := cnt%3 == 0
		if differs(actor, flat(&s.Actor.Net)) != due || (alpha != s.LogAlpha[0]) != due || stepped != due || st.ActorUpdated != due {
			t.Errorf("critic update %d: actor/alpha changed %v/%v, want %v", cnt, differs(actor, flat(&s.Actor.Net)), alpha != s.LogAlpha[0], due)
		}
		if due {
			lastActor = st
		} else if st.ActorLoss != lastActor.ActorLoss || st.LogPi != lastActor.LogPi || st.ActorLR != lastActor.ActorLR {
			t.Errorf("critic update %d: actor loss %v, log pi %v, lr %v; want the last actor step's %v, %v, %v",
				cnt, st.ActorLoss, st.LogPi, st.ActorLR, lastActor.ActorLoss, lastActor.LogPi, lastActor.ActorLR)
		}
		if !differs(critic, flat(&s.Critic1.Net)) || !differs(target, flat(&s.Target1.Net)) {
			t.Errorf("critic update %d: critic or target unchanged", cnt)
		}
	}
	want := map[string]int{"hopper": 1, "walker2d": 20, "ant": 20, "humanoid": 20} // config/mujoco/*.yml actor_freq
	for env, n := range want {
		c, _ := Preset("paper", env, "admpo", 3)
		if c.ActorEvery != n {
			t.Errorf("%s: actor every %d, authors' actor_freq %d", env, c.ActorEvery, n)
		}
	}
}

// Items 3 and 5: the target entropy means what the authors' does: their
// log pi includes -sum(log scale) (actor4ward), ours leaves it out, so our
// SAC's target is theirs minus sum(log scale); alpha starts at exp(0) = 1.
func TestTargetEntropyWithActionScaleAndInitialAlpha(t *testing.T) {
	scaleSum := map[string]float64{"hopper": 0, "walker2d": 0, "halfcheetah": 0, "ant": 0, "humanoid": 17 * math.Log(0.4),
		"inverted-pendulum": math.Log(3)} // ctrlrange of each MJCF file: +-1, Humanoid +-0.4, InvertedPendulum +-3
	for env, want := range scaleSum {
		e, err := envs.Make(env)
		if err != nil {
			t.Fatal(err)
		}
		got := LogActionScale(e.ActionLow(), e.ActionHigh())
		e.Close()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: sum log scale %v, want %v", env, got, want)
		}
	}
	c, err := Preset("paper", "humanoid", "sac", 17)
	if err != nil {
		t.Fatal(err)
	}
	o, err := newOnline(c, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	// The authors' alpha gradient is -(log pi_theirs + T) with log pi_theirs
	// = log pi_ours - sum log(0.4); ours is -(log pi_ours + T_ours): equal
	// for every log pi when T_ours = -8 - 17 log 0.4 (≈ +7.58).
	if want := -8 - 17*math.Log(0.4); math.Abs(o.sac.Cfg.TargetEntropy-want) > 1e-9 {
		t.Errorf("humanoid SAC target entropy %v, want %v", o.sac.Cfg.TargetEntropy, want)
	}
	if o.sac.LogAlpha[0] != 0 || !o.sac.Cfg.AutoAlpha {
		t.Errorf("initial log alpha %v (auto %v), want the authors' 0, tuned", o.sac.LogAlpha[0], o.sac.Cfg.AutoAlpha)
	}
	// The authors' log-probability, written out on our actor's samples,
	// differs from ours by exactly -sum(log scale) (up to their +eps).
	lo, hi := make([]float64, 17), make([]float64, 17)
	for j := range lo {
		lo[j], hi[j] = -0.4, 0.4
	}
	actor := models.NewActor(3, lo, hi, []int{8}, rand.New(rand.NewSource(1)))
	g, err := models.NewActorSampleGraph(actor, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	rng := rand.New(rand.NewSource(3))
	for i := range g.Obs.Data {
		g.Obs.Data[i] = float32(rng.NormFloat64())
	}
	for i := range g.Eps.Data {
		g.Eps.Data[i] = float32(0.3 * rng.NormFloat64())
	}
	a, logp, err := g.Run()
	if err != nil {
		t.Fatal(err)
	}
	const eps = 1.1920929e-07 // np.finfo(np.float32).eps
	diff := 0.0               // log pi_theirs - log pi_ours = sum_j [log(1-t^2) - log(scale(1-t^2)+eps)]
	for _, v := range a {
		tj := float64(v) / 0.4
		diff += math.Log(1-tj*tj) - math.Log(0.4*(1-tj*tj)+eps)
	}
	if math.Abs(diff-(-17*math.Log(0.4))) > 1e-3 {
		t.Errorf("authors' log pi - ours = %v on sample (log pi %v), want -sum log scale = %v", diff, logp[0], -17*math.Log(0.4))
	}
}

// Item 4: the model buffer keeps model_retain_steps / interval roll-out
// rounds, and its capacity is the authors' make_model_buffer_size.
func TestPaperModelBufferRoundsAsAuthors(t *testing.T) {
	for _, x := range []struct {
		env                    string
		retainSteps, interval  int
		batch, schedA, schedTo int
	}{{"hopper", 1000, 250, 100000, 0, 15}, {"walker2d", 1000, 250, 100000, 0, 10},
		{"ant", 2500, 500, 100000, 10000, 5}, {"humanoid", 5000, 1000, 100000, 10000, 10}} {
		c, err := Preset("paper", x.env, "admpo", 3)
		if err != nil {
			t.Fatal(err)
		}
		if c.ModelEvery != x.interval || c.ModelRetain != x.retainSteps/x.interval {
			t.Errorf("%s: every %d retain %d, want %d and %d/%d", x.env, c.ModelEvery, c.ModelRetain, x.interval, x.retainSteps, x.interval)
		}
		// int(rollout_batch_size * rollout_len * model_retain_steps / model_rollout_interval)
		if got, want := c.ModelBufferSize(), x.batch*x.schedTo*x.retainSteps/x.interval; got != want {
			t.Errorf("%s: model buffer %d, authors %d", x.env, got, want)
		}
	}
}

// Item 6 (the fit's side is dynamics.TestADMEpochPassesAndAuthorsImprovement):
// the paper preset's ADM epoch is m passes, with the authors' patience.
func TestPaperPresetADMEpochPasses(t *testing.T) {
	c, _ := Preset("paper", "hopper", "admpo", 3)
	if c.ModelEpochPasses != c.M || c.ModelPatience != 25 {
		t.Errorf("paper preset: epoch passes %d patience %d, want m = %d and 25", c.ModelEpochPasses, c.ModelPatience, c.M)
	}
}

// Items 8, 9, 10: ADMPO-OFF's paper preset runs the authors' D4RL configs:
// fixed alpha, 5000 epochs (3000 random), the actor's cosine stepped per
// epoch, and the code's values for the two halfcheetah data sets.
func TestOfflinePaperPresetAsAuthorsConfigs(t *testing.T) {
	// config/d4rl/*.yml (alpha 0.1, real ratio 0.05, n_epochs 5000, actor lr 1e-4 with the cosine: main4offline.py defaults).
	for _, x := range []struct {
		name       string
		alpha      float64
		epochs, h  int
		beta, real float64
		lr         float64
		schedule   string
	}{
		{"hopper-random", 1.0, 3000, 50, 5, 0.05, 1e-4, "cosine-epoch"},
		{"hopper-medium", 0.05, 5000, 10, 1, 0.05, 1e-4, "cosine-epoch"},
		{"hopper-medium-replay", 0.05, 5000, 5, 0.1, 0.5, 1e-4, "cosine-epoch"},
		{"hopper-medium-expert", 0.05, 5000, 20, 20, 0.5, 1e-4, "cosine-epoch"},
		{"walker2d-random", 1, 3000, 50, 2.5, 0.05, 1e-4, "cosine-epoch"},
		{"walker2d-medium", 0.01, 5000, 10, 5, 0.05, 1e-4, "cosine-epoch"},
		{"walker2d-medium-replay", 0.1, 5000, 5, 0.1, 0.5, 1e-4, "cosine-epoch"},
		{"walker2d-medium-expert", 0.011, 5000, 2, 6, 0.5, 1e-4, "cosine-epoch"},
		{"halfcheetah-random", 0.1, 3000, 10, 2.5, 0.05, 1e-4, "cosine-epoch"},
		{"halfcheetah-medium", 0.1, 5000, 5, 2.5, 0.05, 1e-4, "cosine-epoch"},
		{"halfcheetah-medium-replay", 0.1, 5000, 5, 2.5, 0.05, 7e-5, "constant"},
		{"halfcheetah-medium-expert", 0.05, 5000, 20, 9.16, 0.5, 1e-4, "cosine-epoch"},
	} {
		env, kind, _ := DatasetIdentity(x.name, nil)
		c, err := OfflinePreset("paper", env, kind, "admpo", 6)
		if err != nil {
			t.Fatal(err)
		}
		if c.AutoAlpha || c.Alpha != x.alpha || c.Epochs != x.epochs || c.Horizon != x.h || c.Penalty != x.beta ||
			c.RealRatio != x.real || c.ActorLR != x.lr || c.ActorLRSchedule != x.schedule {
			t.Errorf("%s: auto %v alpha %v epochs %d H %d beta %v real %v lr %v %s; authors: fixed %v, %d, %d, %v, %v, %v, %s",
				x.name, c.AutoAlpha, c.Alpha, c.Epochs, c.Horizon, c.Penalty, c.RealRatio, c.ActorLR, c.ActorLRSchedule,
				x.alpha, x.epochs, x.h, x.beta, x.real, x.lr, x.schedule)
		}
	}
	// CosineAnnealingLR(T_max = n_epochs) stepped after each epoch: epoch e
	// runs at lr (1 + cos(pi e / T)) / 2.
	c, _ := OfflinePreset("paper", "hopper", "medium", "admpo", 3)
	sc := c.sacConfig([]float64{-1, -1, -1}, []float64{1, 1, 1})
	for _, u := range []int{0, 999, 1000, 1500, 2_499_999, 4_999_000, 4_999_999, 5_000_000} {
		e := float64(u / 1000)
		want := 1e-4 * (1 + math.Cos(math.Pi*e/5000)) / 2
		if got := sc.ActorLRAt(u); math.Abs(got-want) > 1e-12 {
			t.Errorf("actor lr at update %d: %v, authors %v", u, got, want)
		}
	}
	if sc.AutoAlpha || sc.InitAlpha != 0.05 {
		t.Errorf("SAC alpha %v auto %v, want fixed 0.05", sc.InitAlpha, sc.AutoAlpha)
	}
}

// Item 11: roll-outs start as the authors' sample_nstep(n, m-1): windows of
// m-1 transitions in one episode, the roll-out state being the window's
// last next state, so every start has a full history (and U^ADM spreads m
// predictions from the first step on).
func TestFullHistoryStartsAsAuthors(t *testing.T) {
	const m = 3
	r, err := buffer.New(1, 1, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Episodes of 1, 2, 4 and 3 transitions (the last one still running);
	// states are numbered so that obs = 10·episode + position.
	lens := []int{1, 2, 4, 3}
	for ep, n := range lens {
		for p := 0; p < n; p++ {
			s, next := float32(10*ep+p), float32(10*ep+p+1)
			end := p == n-1 && ep < len(lens)-1
			if err := r.Add([]float32{s}, []float32{s + 0.5}, 0, []float32{next}, end, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The authors' valid start indices: dist_from_end >= m-1 (transitions
	// left in the episode from the index on, the index included).
	want := map[[m]float32]bool{}
	for ep, n := range lens {
		for p := 0; p < n; p++ {
			if n-p >= m-1 {
				w := [m]float32{}
				for j := 0; j < m-1; j++ {
					w[j] = float32(10*ep + p + j)
				}
				w[m-1] = float32(10*ep + p + m - 1) // s_ of the window's last transition
				want[w] = true
			}
		}
	}
	st, err := r.SampleFullStarts(4000, m, rand.New(rand.NewSource(5)))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[m]float32]int{}
	for row := 0; row < st.N; row++ {
		if st.Len[row] != m {
			t.Fatalf("row %d has history %d, want the full %d", row, st.Len[row], m)
		}
		var w [m]float32
		copy(w[:], st.Obs[row*m:(row+1)*m])
		if !want[w] {
			t.Fatalf("row %d: states %v are no authors' window", row, w)
		}
		for j := 0; j < m-1; j++ {
			if st.Act[row*(m-1)+j] != w[j]+0.5 {
				t.Fatalf("row %d: action %d is %v, want %v", row, j, st.Act[row*(m-1)+j], w[j]+0.5)
			}
		}
		seen[w]++
	}
	for w := range want {
		if n := seen[w]; math.Abs(float64(n)-4000/float64(len(want))) > 200 {
			t.Errorf("window %v drawn %d times of 4000, want about %v (uniform)", w, n, 4000/float64(len(want)))
		}
	}
	if c, _ := Preset("paper", "hopper", "admpo", 3); !c.FullHistoryStarts() {
		t.Error("the paper preset does not start roll-outs with full histories")
	}
}

// The real share of a batch is the authors' int(batch_size*real_ratio).
func TestRealRowsAsAuthors(t *testing.T) {
	for _, x := range []struct {
		ratio          float64
		n, authors, v1 int
	}{{0.05, 256, 12, 13}, {0.5, 256, 128, 128}, {0.05, 32, 1, 2}, {1, 256, 256, 256}} {
		if got := realRows(x.ratio, x.n, true); got != x.authors {
			t.Errorf("%v of %d: %d real rows, authors int(%v) = %d", x.ratio, x.n, got, x.ratio*float64(x.n), x.authors)
		}
		if got := realRows(x.ratio, x.n, false); got != x.v1 {
			t.Errorf("%v of %d (version 1): %d real rows, want the nearest integer %d", x.ratio, x.n, got, x.v1)
		}
	}
	o, err := newOnline(tinyConfig("admpo"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if !o.realFloor {
		t.Error("a version 2 run rounds the real rows")
	}
}

// legacyOnlineJSON is a config.json as main's code wrote it before the
// fidelity change (no config_version; rollout_schedule keys A, B, From, To).
const legacyOnlineJSON = `{"env":"hopper","algo":"sac","preset":"paper","seed":3,"steps":600,"warmup_steps":200,
"updates_per_step":1,"batch":32,"real_ratio":0.05,"target_entropy":-3,"lr":0.0003,"tau":0.005,"hidden":[32,32],
"model_every":200,"rollout_batch":64,"rollout_schedule":{"A":200,"B":600,"From":1,"To":3},"model_retain":4,"m":3,
"adm_hidden":16,"adm_layers":1,"adm_res_blocks":1,"ensemble":3,"elites":2,"model_lr":0.0003,"model_warm_start":false,
"model_max_epochs":3,"model_patience":2,"model_max_holdout":500,"engine":"direct","eval_every":300,"eval_episodes":1,
"checkpoint_every":300,"threads":0,"blas_threads":1,"provider":"cpu"}`

// An old config.json keeps its meaning: steps include the warm-up, the
// schedule reads env steps, alpha 0.2 tuned, actor every update, the
// target entropy passed through, one ADM pass per epoch, any-state starts.
func TestLegacyConfigsKeepTheirMeaning(t *testing.T) {
	var c OnlineConfig
	if err := json.Unmarshal([]byte(legacyOnlineJSON), &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Version != 1 || c.TotalSteps() != 600 || c.ScheduleStep(400) != 400 || c.Rollout != (Schedule{200, 600, 1, 3}) ||
		c.ActorEvery != 1 || c.Alpha != 0.2 || !c.AutoAlpha || c.ModelEpochPasses != 1 || c.ModelImprove != "scaled" ||
		c.FullHistoryStarts() || c.SACTargetEntropy([]float64{-0.4}, []float64{0.4}) != -3 {
		t.Fatalf("legacy config read as %+v", c)
	}
	var oc OfflineConfig
	if err := json.Unmarshal([]byte(`{"algo":"admpo","epochs":1000,"steps_per_epoch":1000,"auto_alpha":true,"init_alpha":0.2}`), &oc); err != nil {
		t.Fatal(err)
	}
	if oc.Version != 1 || oc.ActorLRSchedule != "cosine" || oc.ModelEpochPasses != 1 || oc.FullHistoryStarts() {
		t.Fatalf("legacy offline config read as %+v", oc)
	}
	if sc := oc.sacConfig([]float64{-1}, []float64{1}); sc.ActorLRDecayUpdates != 1000000 || sc.ActorLRDecayEvery > 1 {
		t.Fatalf("legacy offline cosine over %d updates in blocks of %d, want every update over 1M", sc.ActorLRDecayUpdates, sc.ActorLRDecayEvery)
	}
	// A new config round-trips with snake_case keys only.
	p, _ := Preset("paper", "walker2d", "admpo", 6)
	var back OnlineConfig
	if err := json.Unmarshal(p.JSON(), &back); err != nil || back.Version != ConfigVersion || back.ActorEvery != 20 || back.Rollout != p.Rollout {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	var keys map[string]any
	json.Unmarshal(p.JSON(), &keys)
	for k, v := range keys {
		if k != strings.ToLower(k) {
			t.Errorf("config key %q is not snake_case", k)
		}
		if sub, ok := v.(map[string]any); ok {
			for k2 := range sub {
				if k2 != strings.ToLower(k2) {
					t.Errorf("config key %s.%s is not snake_case", k, k2)
				}
			}
		}
	}
}

// A checkpoint whose config is in the old format (as main's code wrote it)
// resumes to the same end state as an uninterrupted run of that config.
func TestLegacyCheckpointResumesIdentically(t *testing.T) {
	var cfg OnlineConfig
	if err := json.Unmarshal([]byte(legacyOnlineJSON), &cfg); err != nil {
		t.Fatal(err)
	}
	want := straightRun(t, cfg)
	dir := filepath.Join(t.TempDir(), "b")
	killed(t, NewOnline, cfg, dir, 300)
	// Put the old-format config into the checkpoint and config.json.
	if err := rewriteCheckpointConfig(dir, []byte(legacyOnlineJSON)); err != nil {
		t.Fatal(err)
	}
	c := resumed(t, ResumeOnline, dir)
	if c.Cfg.Version != 1 || c.Cfg.TotalSteps() != 600 {
		t.Fatalf("resumed config %+v", c.Cfg)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := capture(c)
	if got.step != want.step || got.updates != want.updates || got.logAlpha != want.logAlpha {
		t.Fatalf("counters differ:\n got %+v\nwant %+v", pick(got), pick(want))
	}
	bitexact.Same(t, "actor weights", got.actor, want.actor)
	bitexact.Same(t, "real buffer", got.real, want.real)
}

// rewriteCheckpointConfig replaces the config of dir's checkpoint and
// config.json with config.
func rewriteCheckpointConfig(dir string, config []byte) error {
	f, err := loadCheckpoint(dir, rundir.Online, &OnlineConfig{})
	if err != nil {
		return err
	}
	f.PutBytes("config", config)
	if err := f.Save(filepath.Join(dir, rundir.CheckpointFile)); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), config, 0o644)
}
