package train

// MemoryPart is one part of a run's memory estimate: what it is, the
// override flags that size it, and its bytes.
type MemoryPart struct {
	Name  string
	Flags []string
	Bytes float64
}

// The estimates count the large allocations a run makes for sure (the
// buffers at their capacity, the networks' weights with their gradients
// and Adam moments, the training and roll-out batches' activations), so
// they are lower bounds: a run whose estimate exceeds the machine's memory
// cannot fit.

const (
	f32       = 4   // bytes per float32
	fitBatch  = 256 // the ADM's and the ensemble's fit batch (dynamics)
	adamTimes = 4   // weights, gradients and Adam's two moments
)

// transitionBytes is one replay buffer row: obs, next obs, act, reward and
// two flags.
func transitionBytes(od, ad int) float64 { return float64((2*od+ad+1)*f32 + 2) }

// mlpParams is the weight count of a fully connected net in -> hidden -> out.
func mlpParams(in int, hidden []int, out int) float64 {
	n, prev := 0.0, float64(in)
	for _, h := range hidden {
		n += (prev + 1) * float64(h)
		prev = float64(h)
	}
	return n + (prev+1)*float64(out)
}

func sumInts(v []int) float64 {
	s := 0.0
	for _, x := range v {
		s += float64(x)
	}
	return s
}

// sacParts are the actor's and the two critics' (and their targets')
// weights with Adam, and one batch's activations through them.
func sacParts(od, ad int, hidden []int, batch int) []MemoryPart {
	actor := mlpParams(od, hidden, 2*ad)
	critic := mlpParams(od+ad, hidden, 1)
	return []MemoryPart{
		{"actor and critics", []string{"hidden"}, f32 * (adamTimes*(actor+2*critic) + 2*critic)},
		// Forward and backward activations of the actor, two critics and
		// two targets.
		{"policy update batch", []string{"batch", "hidden"}, f32 * 2 * 5 * float64(batch) * (sumInts(hidden) + float64(od+ad))},
	}
}

// modelParts are the dynamics model's weights, its fit batch's and its
// roll-outs' activations, one roll-out's transitions (horizon long, sized
// by horizonFlag) and the model buffer (rows transitions).
func modelParts(m ModelSettings, algo string, od, ad, rolloutBatch, horizon int, horizonFlag string, rows float64, bufferFlags []string) []MemoryPart {
	var parts []MemoryPart
	switch algo {
	case "admpo":
		h, l, mm := float64(m.ADMHidden), float64(m.ADMLayers), float64(m.M)
		gru := 3*h*(float64(od+ad)+h+2) + (l-1)*3*h*(2*h+2)
		head := float64(m.ADMResBlocks)*2*h*(h+1) + (h+1)*2*float64(od+1)
		parts = append(parts,
			MemoryPart{"ADM weights", []string{"adm-hidden", "adm-layers", "adm-res-blocks"}, f32 * adamTimes * (gru + head)},
			// Back-propagation through m steps keeps each layer's gates.
			MemoryPart{"ADM fit batch", []string{"m", "adm-hidden", "adm-layers"}, f32 * fitBatch * mm * l * 4 * h},
			// A roll-out holds each start's m-step history and each row's
			// GRU state per step back.
			MemoryPart{"ADM roll-out", []string{"rollout-batch", "m", "adm-hidden"},
				f32 * float64(rolloutBatch) * mm * (float64(od+ad) + l*h)})
	case "mbpo", "mopo":
		e := float64(m.Ensemble)
		member := mlpParams(od+ad, []int{200, 200, 200, 200}, 2*(od+1))
		parts = append(parts,
			MemoryPart{"ensemble", []string{"ensemble"}, f32 * e * (adamTimes*member + 2*fitBatch*(800+float64(od+ad)))},
			MemoryPart{"ensemble roll-out", []string{"rollout-batch", "ensemble"}, f32 * float64(rolloutBatch) * e * (800 + 2*float64(od+1))})
	default:
		return nil
	}
	return append(parts,
		MemoryPart{"roll-out transitions", []string{"rollout-batch", horizonFlag}, float64(rolloutBatch) * float64(horizon) * transitionBytes(od, ad)},
		MemoryPart{"model buffer", bufferFlags, rows * transitionBytes(od, ad)})
}

// MemoryParts estimates the memory of an online run on a task with od
// observation and ad action values.
func (c OnlineConfig) MemoryParts(od, ad int) []MemoryPart {
	parts := []MemoryPart{{"real replay buffer", []string{"steps", "warmup"}, float64(c.TotalSteps()) * transitionBytes(od, ad)}}
	parts = append(parts, sacParts(od, ad, c.Hidden, c.Batch)...)
	if c.Algo != "sac" {
		rows := float64(c.ModelRetain) * float64(c.RolloutBatch) * float64(max(c.Rollout.From, c.Rollout.To))
		parts = append(parts, modelParts(c.ModelSettings, c.Algo, od, ad, c.RolloutBatch, max(c.Rollout.From, c.Rollout.To),
			"rollout-schedule", rows, []string{"model-retain", "rollout-batch", "rollout-schedule"})...)
	}
	return parts
}

// MemoryParts estimates the memory of an offline run on dataRows
// transitions of od observation and ad action values (held twice: as read
// and in the replay buffer).
func (c OfflineConfig) MemoryParts(od, ad, dataRows int) []MemoryPart {
	parts := []MemoryPart{{"data set", []string{"dataset"}, 2 * float64(dataRows) * transitionBytes(od, ad)}}
	parts = append(parts, sacParts(od, ad, c.Hidden, c.Batch)...)
	if c.Algo != "bc" {
		rows := float64(c.ModelRetain) * float64(c.RolloutBatch) * float64(c.Horizon)
		parts = append(parts, modelParts(c.ModelSettings, c.Algo, od, ad, c.RolloutBatch, c.Horizon, "horizon", rows,
			[]string{"model-retain", "rollout-batch", "horizon"})...)
	}
	return parts
}
