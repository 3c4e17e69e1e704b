package rollout

import "math"

// UADM is U^ADM for one row: sqrt(mean over the od state dims of the
// population variance over k of the kn mean next-state predictions in preds
// (kn rows of od values, one per backtracking length k)); 0 when kn <= 1.
// The roll-out engines and the deployed policy's monitor share it.
func UADM(preds []float32, kn, od int) float64 {
	if kn <= 1 {
		return 0
	}
	var total float64
	for d := 0; d < od; d++ {
		var s float64
		for j := 0; j < kn; j++ {
			s += float64(preds[j*od+d])
		}
		mean := s / float64(kn)
		var v float64
		for j := 0; j < kn; j++ {
			e := float64(preds[j*od+d]) - mean
			v += e * e
		}
		total += v / float64(kn)
	}
	return math.Sqrt(total / float64(od))
}
