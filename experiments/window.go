package experiments

// history is the recent past of every row of a roll-out: up to m states
// and the actions taken in them, oldest first. The last state is the
// current one; its action slot holds the action being taken (set before a
// prediction).
type history struct {
	m, od, ad int
	l         []int     // states per row (1..m)
	s         []float32 // [rows, m, od]
	a         []float32 // [rows, m, ad]
}

func newHistory(rows, m, od, ad int) *history {
	return &history{m: m, od: od, ad: ad, l: make([]int, rows), s: make([]float32, rows*m*od), a: make([]float32, rows*m*ad)}
}

func (h *history) state(r, j int) []float32 {
	o := (r*h.m + j) * h.od
	return h.s[o : o+h.od]
}

func (h *history) action(r, j int) []float32 {
	o := (r*h.m + j) * h.ad
	return h.a[o : o+h.ad]
}

// current is row r's current state.
func (h *history) current(r int) []float32 { return h.state(r, h.l[r]-1) }

// setAction sets the action taken in row r's current state.
func (h *history) setAction(r int, a []float32) { copy(h.action(r, h.l[r]-1), a) }

// push appends row r's new current state, dropping the oldest state and
// action when the window is full.
func (h *history) push(r int, next []float32) {
	if h.l[r] == h.m {
		rs := h.s[r*h.m*h.od : (r+1)*h.m*h.od]
		copy(rs, rs[h.od:])
		ra := h.a[r*h.m*h.ad : (r+1)*h.m*h.ad]
		copy(ra, ra[h.ad:])
		h.l[r]--
	}
	copy(h.state(r, h.l[r]), next)
	h.l[r]++
}

// load sets row r's window to the given states (oldest first, at most m)
// and the actions taken in all but the last.
func (h *history) load(r int, states [][]float32, acts [][]float32) {
	if len(states) > h.m {
		acts = acts[len(states)-h.m:]
		states = states[len(states)-h.m:]
	}
	h.l[r] = len(states)
	for j, s := range states {
		copy(h.state(r, j), s)
		if j < len(states)-1 {
			copy(h.action(r, j), acts[j])
		}
	}
}
