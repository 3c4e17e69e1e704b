// Package window holds the recent history of every row of a batched model
// roll-out: up to M states and the actions taken in them, oldest first. The
// infer roll-out engines and the experiments' open-loop predictions share it.
package window
