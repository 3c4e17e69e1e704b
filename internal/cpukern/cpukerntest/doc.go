// Package cpukerntest runs tests on every CPU kernel path this machine
// supports (package cpukern), so cross-checks against independent
// references cover each path, not only the one the CPU picks.
package cpukerntest
