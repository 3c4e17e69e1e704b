// Package sacdevtest checks a sacdev.Learner on any device against package
// sac's CPU agent (Gorgonia graphs and models.Adam) and times its update.
// It is for tests only (device/sacdev's on emu, device/cuda's on a GPU):
// it links sac, models and Gorgonia, which the device packages themselves
// never do.
package sacdevtest
