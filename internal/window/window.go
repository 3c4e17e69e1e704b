package window

// Window is the history of a batch of rows. Row r holds Len[r] states
// (1..M); the last is the current state, and its action slot holds the
// action being taken once it is set.
type Window struct {
	M, ObsDim, ActDim int
	Len               []int     // states per row
	S                 []float32 // [rows, M, ObsDim]
	A                 []float32 // [rows, M, ActDim]; A[Len-1] is the action being taken
}

// New returns an empty window of rows rows for states of obsDim and
// actions of actDim, keeping at most m states per row.
func New(rows, m, obsDim, actDim int) *Window {
	return &Window{M: m, ObsDim: obsDim, ActDim: actDim, Len: make([]int, rows),
		S: make([]float32, rows*m*obsDim), A: make([]float32, rows*m*actDim)}
}

// State is row r's j-th state (0 = oldest kept); it aliases the window.
func (w *Window) State(r, j int) []float32 {
	o := (r*w.M + j) * w.ObsDim
	return w.S[o : o+w.ObsDim]
}

// Action is the action taken in row r's j-th state; it aliases the window.
func (w *Window) Action(r, j int) []float32 {
	o := (r*w.M + j) * w.ActDim
	return w.A[o : o+w.ActDim]
}

// Current is row r's current (newest) state.
func (w *Window) Current(r int) []float32 { return w.State(r, w.Len[r]-1) }

// SetAction sets the action taken in row r's current state.
func (w *Window) SetAction(r int, a []float32) { copy(w.Action(r, w.Len[r]-1), a) }

// Push appends row r's new current state, dropping the oldest state and its
// action when the row is full.
func (w *Window) Push(r int, next []float32) {
	if w.Len[r] == w.M {
		rs := w.S[r*w.M*w.ObsDim : (r+1)*w.M*w.ObsDim]
		copy(rs, rs[w.ObsDim:])
		ra := w.A[r*w.M*w.ActDim : (r+1)*w.M*w.ActDim]
		copy(ra, ra[w.ActDim:])
		w.Len[r]--
	}
	copy(w.State(r, w.Len[r]), next)
	w.Len[r]++
}

// Load sets row r to the given states (oldest first; only the newest M are
// kept) and the actions taken in all but the last of them.
func (w *Window) Load(r int, states, acts [][]float32) {
	if len(states) > w.M {
		acts = acts[len(states)-w.M:]
		states = states[len(states)-w.M:]
	}
	w.Len[r] = len(states)
	for j, s := range states {
		copy(w.State(r, j), s)
		if j < len(states)-1 {
			copy(w.Action(r, j), acts[j])
		}
	}
}
