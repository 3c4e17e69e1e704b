package policies

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/admpo/admpo/infer"
	"github.com/admpo/admpo/onnx/schema"
)

// checkModels checks the manifest against the models' graphs and metadata.
// ai is nil when the bundle has no ADM.
func checkModels(m *Manifest, pi, ai *ModelInfo) error {
	if err := checkIO(PolicyFile, pi, schema.Actor()); err != nil {
		return err
	}
	md := pi.Metadata
	if k := md[schema.MetaModel]; k != schema.KindActor {
		return fmt.Errorf("policies: %s is a %q model, want an admpo actor", PolicyFile, k)
	}
	if err := checkDims(PolicyFile, md, m.ObsDim, m.ActDim); err != nil {
		return err
	}
	if t := md[schema.MetaTask]; t != "" && m.Task != "" && t != m.Task {
		return fmt.Errorf("policies: %s was exported for task %q but the manifest says %q", PolicyFile, t, m.Task)
	}
	scale, err1 := metaFloats(md, schema.MetaScale)
	bias, err2 := metaFloats(md, schema.MetaBias)
	if err1 != nil || err2 != nil || len(scale) != m.ActDim || len(bias) != m.ActDim {
		return fmt.Errorf("policies: %s: action_scale/action_bias metadata missing or of the wrong length", PolicyFile)
	}
	for i := range scale {
		ws := float32((m.ActHigh[i] - m.ActLow[i]) / 2)
		wb := float32((m.ActHigh[i] + m.ActLow[i]) / 2)
		if !near(scale[i], ws) || !near(bias[i], wb) {
			return fmt.Errorf("policies: %s squashes action %d into [%v, %v] but the manifest bounds are [%v, %v]",
				PolicyFile, i, bias[i]-scale[i], bias[i]+scale[i], m.ActLow[i], m.ActHigh[i])
		}
	}
	if ai == nil {
		return nil
	}
	if err := checkIO(ADMFile, ai, schema.ADM()); err != nil {
		return err
	}
	md = ai.Metadata
	if k := md[schema.MetaModel]; k != schema.KindADM {
		return fmt.Errorf("policies: %s is a %q model, want an admpo ADM", ADMFile, k)
	}
	if err := checkDims(ADMFile, md, m.ObsDim, m.ActDim); err != nil {
		return err
	}
	if mm, err := infer.MetaInt(md, schema.MetaM); err != nil || mm != m.M {
		return fmt.Errorf("policies: %s has m=%q but the manifest says m=%d", ADMFile, md[schema.MetaM], m.M)
	}
	if t := md[schema.MetaTask]; t != "" && m.Task != "" && t != m.Task {
		return fmt.Errorf("policies: %s was trained for task %q but the manifest says %q", ADMFile, t, m.Task)
	}
	if n, ok := m.Normalizers["adm"]; ok {
		mean, err1 := metaFloats(md, schema.MetaNormMean)
		std, err2 := metaFloats(md, schema.MetaNormStd)
		if err1 != nil || err2 != nil || !slices.Equal(mean, n.Mean) || !slices.Equal(std, n.Std) {
			return fmt.Errorf("policies: the manifest's \"adm\" normaliser differs from the one inside %s", ADMFile)
		}
	}
	return nil
}

func checkIO(file string, info *ModelInfo, sig schema.Signature) error {
	for _, want := range sig.Inputs {
		if !slices.Contains(info.Inputs, want) {
			return fmt.Errorf("policies: %s has no input %q (inputs: %s)", file, want, strings.Join(info.Inputs, ", "))
		}
	}
	for _, want := range sig.Outputs {
		if !slices.Contains(info.Outputs, want) {
			return fmt.Errorf("policies: %s has no output %q (outputs: %s)", file, want, strings.Join(info.Outputs, ", "))
		}
	}
	return nil
}

func checkDims(file string, md map[string]string, obsDim, actDim int) error {
	od, err1 := infer.MetaInt(md, schema.MetaObsDim)
	ad, err2 := infer.MetaInt(md, schema.MetaActDim)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("policies: %s: obs_dim/act_dim metadata missing or bad (%v, %v)", file, err1, err2)
	}
	if od != obsDim || ad != actDim {
		return fmt.Errorf("policies: %s is for obs_dim=%d, act_dim=%d but the manifest says obs_dim=%d, act_dim=%d", file, od, ad, obsDim, actDim)
	}
	return nil
}

func near(a, b float32) bool {
	return math.Abs(float64(a)-float64(b)) <= 1e-6*math.Max(1, math.Abs(float64(b)))
}

// metaFloats parses the float list (schema.JoinFloats) md holds under key.
func metaFloats(md map[string]string, key string) ([]float32, error) {
	v, ok := md[key]
	if !ok {
		return nil, fmt.Errorf("no %q", key)
	}
	out, err := schema.ParseFloats(v)
	if err != nil {
		return nil, fmt.Errorf("%q %w", key, err)
	}
	return out, nil
}
