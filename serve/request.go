package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/admpo/admpo/internal/stats"
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

// requestKeys and historyKeys are the keys a /v1/act body and its
// "history" may hold, matched exactly (case included).
var (
	requestKeys = []string{"obs", "deterministic", "history"}
	historyKeys = []string{"obs", "act"}
)

// decodeObject reads the JSON object data whose keys must be among keys
// (matched exactly, each at most once) and returns each key's raw value,
// nil when absent. what names the object in errors ("" for the body).
func decodeObject(data []byte, what string, keys []string) ([]json.RawMessage, error) {
	bad := func(format string, args ...any) error {
		if what == "" {
			return badRequest("bad JSON: "+format, args...)
		}
		return badRequest("%q: "+format, append([]any{what}, args...)...)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if errors.Is(err, io.EOF) && what == "" {
		return nil, badRequest("empty body: want a JSON object with \"obs\"")
	}
	if err != nil {
		return nil, bad("%s", jsonHint(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, bad("want a JSON object, not %v", tok)
	}
	vals := make([]json.RawMessage, len(keys))
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, bad("%s", jsonHint(err))
		}
		key, _ := kt.(string)
		i := slices.Index(keys, key)
		if i < 0 {
			return nil, bad("unknown field %q (keys are case-sensitive; want %s)", key, quoteAll(keys))
		}
		if vals[i] != nil {
			return nil, bad("field %q appears twice", key)
		}
		if err := dec.Decode(&vals[i]); err != nil {
			return nil, bad("%s", jsonHint(err))
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, bad("%s", jsonHint(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bad("data after the object")
	}
	return vals, nil
}

// jsonHint is err's message, with a hint for NaN and Infinity literals.
func jsonHint(err error) string {
	msg := err.Error()
	if strings.Contains(msg, "invalid character 'N'") || strings.Contains(msg, "invalid character 'I'") {
		msg += " (NaN and Infinity are not JSON numbers; observations must be finite)"
	}
	return msg
}

func quoteAll(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = strconv.Quote(k)
	}
	return strings.Join(q, ", ")
}

// isNull tells whether a raw value is absent or JSON null.
func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// decodeRequest parses and validates a /v1/act body. Every failure is an
// *httpError with a 4xx status.
func decodeRequest(body []byte, lim limits) (*actRequest, error) {
	vals, err := decodeObject(body, "", requestKeys)
	if err != nil {
		return nil, err
	}
	w := struct {
		Obs, Deterministic, History json.RawMessage
	}{vals[0], vals[1], vals[2]}
	if isNull(w.Obs) {
		return nil, badRequest("missing \"obs\": want one observation [%d numbers] or a batch [[%d numbers], ...]", lim.obsDim, lim.obsDim)
	}
	r := &actRequest{}
	if !isNull(w.Deterministic) {
		var d bool
		if err := json.Unmarshal(w.Deterministic, &d); err != nil {
			return nil, badRequest("\"deterministic\": %v", err)
		}
		r.deterministic = &d
	}
	if isNested(w.Obs) {
		var rows [][]float32
		if err := json.Unmarshal(w.Obs, &rows); err != nil {
			return nil, badRequest("\"obs\": %v", err)
		}
		if err := findNull("obs", w.Obs, true); err != nil {
			return nil, err
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
		if err := findNull("obs", w.Obs, false); err != nil {
			return nil, err
		}
		if len(one) != lim.obsDim {
			return nil, badRequest("\"obs\" has %d values, want obs_dim=%d", len(one), lim.obsDim)
		}
		if i := stats.FirstNonFinite(one); i >= 0 {
			return nil, badRequest("\"obs\" value %d is not finite", i)
		}
		r.obs, r.n = one, 1
	}
	if !isNull(w.History) {
		if r.batch {
			return nil, badRequest("\"history\" is only accepted with a single observation")
		}
		hv, err := decodeObject(w.History, "history", historyKeys)
		if err != nil {
			return nil, err
		}
		var h struct{ Obs, Act [][]float32 }
		if !isNull(hv[0]) {
			if err := json.Unmarshal(hv[0], &h.Obs); err != nil {
				return nil, badRequest("\"history.obs\": %v", err)
			}
			if err := findNull("history.obs", hv[0], true); err != nil {
				return nil, err
			}
		}
		if !isNull(hv[1]) {
			if err := json.Unmarshal(hv[1], &h.Act); err != nil {
				return nil, badRequest("\"history.act\": %v", err)
			}
			if err := findNull("history.act", hv[1], true); err != nil {
				return nil, err
			}
		}
		if len(h.Obs) != len(h.Act) {
			return nil, badRequest("\"history\" has %d observations but %d actions: want one action per observation", len(h.Obs), len(h.Act))
		}
		if len(h.Obs) > lim.maxHistory {
			return nil, &httpError{status: http.StatusRequestEntityTooLarge,
				msg: fmt.Sprintf("\"history\" has %d steps, the limit is %d", len(h.Obs), lim.maxHistory)}
		}
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

// findNull returns a 400 naming the first null in raw, an array of
// numbers (nested: of rows of numbers) that json.Unmarshal has already
// accepted: Go reads null as 0, but a missing value is not a zero.
func findNull(field string, raw json.RawMessage, nested bool) error {
	if !bytes.Contains(raw, []byte("null")) {
		return nil
	}
	nullIn := func(row json.RawMessage) int {
		var vals []*float32
		if json.Unmarshal(row, &vals) != nil {
			return -1
		}
		return slices.Index(vals, nil)
	}
	if !nested {
		if j := nullIn(raw); j >= 0 {
			return badRequest("%q value %d is null: every value must be a number (a missing value is not 0)", field, j)
		}
		return nil
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(raw, &rows); err != nil {
		return badRequest("%q: %v", field, err)
	}
	for i, row := range rows {
		if isNull(row) {
			return badRequest("%q row %d is null: want an array of numbers", field, i)
		}
		if j := nullIn(row); j >= 0 {
			return badRequest("%q row %d value %d is null: every value must be a number (a missing value is not 0)", field, i, j)
		}
	}
	return nil
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
		if j := stats.FirstNonFinite(row); j >= 0 {
			return nil, badRequest("%q row %d value %d is not finite", field, i, j)
		}
		flat = append(flat, row...)
	}
	return flat, nil
}
