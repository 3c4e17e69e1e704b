package onnx_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
	ort "github.com/yalue/onnxruntime_go"
)

func TestZZProfile(t *testing.T) {
	if os.Getenv("ZZPROF") == "" {
		t.Skip()
	}
	initORT(t)
	cfg := models.DefaultADMConfig(11, 3, 5)
	m := randADM(t, 1, cfg)
	var batch int
	fmt.Sscan(os.Getenv("ZZBATCH"), &batch)
	for _, form := range []onnx.ADMForm{onnx.ADMGRUOp, onnx.ADMUnrolled} {
		model, _ := onnx.ExportADM(m, onnx.ADMOptions{Form: form}, nil)
		rng := rand.New(rand.NewSource(2))
		B := int64(batch)
		obs, _ := ort.NewTensor(ort.NewShape(B, 11), randVec(rng, batch*11, 1))
		acts, _ := ort.NewTensor(ort.NewShape(5, B, 3), randVec(rng, 5*batch*3, 1))
		lens := make([]int32, batch)
		for i := range lens {
			lens[i] = int32(1 + rng.Intn(5))
			if os.Getenv("ZZFULL") != "" {
				lens[i] = 5
			}
		}
		lt, _ := ort.NewTensor(ort.NewShape(B), lens)
		opts, _ := ort.NewSessionOptions()
		th := 2
		fmt.Sscan(os.Getenv("ZZTHREADS"), &th)
		opts.SetIntraOpNumThreads(th)
		opts.SetInterOpNumThreads(1)
		dir := t.TempDir()
		if os.Getenv("ZZOPS") != "" {
			opts.EnableProfiling(filepath.Join(dir, "p"))
		}
		s, err := ort.NewDynamicAdvancedSessionWithONNXData(model, []string{"obs", "actions", "lengths"}, []string{"next_obs_mean", "reward_mean", "logvar"}, opts)
		if err != nil {
			t.Fatal(err)
		}
		outs := make([]ort.Value, 3)
		s.Run([]ort.Value{obs, acts, lt}, outs)
		for _, o := range outs {
			o.Destroy()
		}
		var best time.Duration = time.Hour
		for r := 0; r < 6; r++ {
			outs := make([]ort.Value, 3)
			st := time.Now()
			s.Run([]ort.Value{obs, acts, lt}, outs)
			if d := time.Since(st); d < best {
				best = d
			}
			for _, o := range outs {
				o.Destroy()
			}
		}
		t.Logf("%s batch %d: best %v, %.0f seq/s", form, batch, best, float64(batch)/best.Seconds())
		s.Destroy()
		opts.Destroy()
		if os.Getenv("ZZOPS") == "" {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(dir, "p*"))
		b, _ := os.ReadFile(files[0])
		var ev []struct {
			Cat  string         `json:"cat"`
			Name string         `json:"name"`
			Dur  float64        `json:"dur"`
			Args map[string]any `json:"args"`
		}
		json.Unmarshal(b, &ev)
		byOp := map[string]float64{}
		for _, e := range ev {
			if e.Cat == "Node" {
				if op, ok := e.Args["op_name"].(string); ok {
					byOp[op] += e.Dur
				}
			}
		}
		var keys []string
		for k := range byOp {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return byOp[keys[i]] > byOp[keys[j]] })
		for _, k := range keys {
			t.Logf("  %-20s %8.1f ms (4 runs)", k, byOp[k]/1000)
		}
	}
}
