package scratch

// Resize returns s with length n: s's own storage when its capacity holds
// n (the old values stay), else a new zeroed slice.
func Resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
