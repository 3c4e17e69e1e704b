// Package ensdevtest checks an ensdev.Trainer on any device against models'
// ensemble training graph on the CPU (Gorgonia and models.Adam) and times
// its step. It is for tests only (device/ensdev's on emu, device/cuda's on
// a GPU): it links models and Gorgonia, which the device packages never do.
package ensdevtest
