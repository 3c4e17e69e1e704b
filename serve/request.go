package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
)

// limits bound what a request may ask for.
type limits struct {
	obsDim, actDim int
	maxBatch       int
	maxHistory     int
}

// actRequest is a decoded, validated POST /v1/act body.
type actRequest struct {
	obs           []float32 // n rows of obsDim
	n             int
	batch         bool  // obs was a list of observations
	deterministic *bool // nil: the server's default
	history       bool
	histObs       []float32 // rows of obsDim, oldest first
	histAct       []float32 // rows of actDim
}

type wireRequest struct {
	Obs           json.RawMessage `json:"obs"`
	Deterministic *bool           `json:"deterministic"`
	History       *wireHistory    `json:"history"`
}

type wireHistory struct {
	Obs [][]float32 `json:"obs"`
	Act [][]float32 `json:"act"`
}

// httpError is an error with the HTTP status to answer.
type httpError struct {
	status int
	msg    string
}

// Error returns the message sent to the client.
func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) *httpError {
	return &httpError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// decodeRequest parses and validates a /v1/act body. Every failure is an
// *httpError with a 4xx status.
func decodeRequest(body []byte, lim limits) (*actRequest, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var w wireRequest
	if err := dec.Decode(&w); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, badRequest("empty body: want a JSON object with \"obs\"")
		}
		msg := err.Error()
		if strings.Contains(msg, "invalid character 'N'") || strings.Contains(msg, "invalid character 'I'") {
			msg += " (NaN and Infinity are not JSON numbers; observations must be finite)"
		}
		return nil, badRequest("bad JSON: %s", msg)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badRequest("bad JSON: data after the request object")
	}
	if len(w.Obs) == 0 || string(w.Obs) == "null" {
		return nil, badRequest("missing \"obs\": want one observation [%d numbers] or a batch [[%d numbers], ...]", lim.obsDim, lim.obsDim)
	}
	r := &actRequest{deterministic: w.Deterministic}
	if isNested(w.Obs) {
		var rows [][]float32
		if err := json.Unmarshal(w.Obs, &rows); err != nil {
			return nil, badRequest("\"obs\": %v", err)
		}
		if len(rows) == 0 {
			return nil, badRequest("\"obs\": empty batch")
		}
		if len(rows) > lim.maxBatch {
			return nil, &httpError{status: http.StatusRequestEntityTooLarge,
				msg: fmt.Sprintf("\"obs\": batch of %d observations exceeds the limit of %d", len(rows), lim.maxBatch)}
		}
		flat, err := flatten("obs", rows, lim.obsDim)
		if err != nil {
			return nil, err
		}
		r.obs, r.n, r.batch = flat, len(rows), true
	} else {
		var one []float32
		if err := json.Unmarshal(w.Obs, &one); err != nil {
			return nil, badRequest("\"obs\": %v", err)
		}
		if len(one) != lim.obsDim {
			return nil, badRequest("\"obs\" has %d values, want obs_dim=%d", len(one), lim.obsDim)
		}
		if i := nonFinite(one); i >= 0 {
			return nil, badRequest("\"obs\" value %d is not finite", i)
		}
		r.obs, r.n = one, 1
	}
	if w.History != nil {
		if r.batch {
			return nil, badRequest("\"history\" is only accepted with a single observation")
		}
		h := w.History
		if len(h.Obs) != len(h.Act) {
			return nil, badRequest("\"history\" has %d observations but %d actions: want one action per observation", len(h.Obs), len(h.Act))
		}
		if len(h.Obs) > lim.maxHistory {
			return nil, &httpError{status: http.StatusRequestEntityTooLarge,
				msg: fmt.Sprintf("\"history\" has %d steps, the limit is %d", len(h.Obs), lim.maxHistory)}
		}
		var err error
		if r.histObs, err = flatten("history.obs", h.Obs, lim.obsDim); err != nil {
			return nil, err
		}
		if r.histAct, err = flatten("history.act", h.Act, lim.actDim); err != nil {
			return nil, err
		}
		r.history = true
	}
	return r, nil
}

// isNested tells whether a JSON array's first element is an array.
func isNested(raw []byte) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return false
	}
	i = skipSpace(raw, i+1)
	return i < len(raw) && raw[i] == '['
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func flatten(field string, rows [][]float32, dim int) ([]float32, error) {
	flat := make([]float32, 0, len(rows)*dim)
	for i, row := range rows {
		if len(row) != dim {
			return nil, badRequest("%q row %d has %d values, want %d", field, i, len(row), dim)
		}
		if j := nonFinite(row); j >= 0 {
			return nil, badRequest("%q row %d value %d is not finite", field, i, j)
		}
		flat = append(flat, row...)
	}
	return flat, nil
}

func nonFinite(v []float32) int {
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return i
		}
	}
	return -1
}
