// Package admdevtest checks an admdev.Trainer on any device against models'
// ADM training graph on the CPU (Gorgonia and models.Adam) and times its
// step. It is for tests only (device/admdev's on emu, device/cuda's on a
// GPU): it links models and Gorgonia, which the device packages never do.
package admdevtest
