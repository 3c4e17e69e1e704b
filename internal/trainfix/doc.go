// Package trainfix holds test fixtures of the packages above train
// (experiments, the admpo command): random hopper data sets and offline runs
// small enough for a unit test. Only tests import it; train's own tests get
// it through their external test package (train/fixtures_hook_test.go sets
// train.Fixtures), since train cannot import what imports train.
package trainfix
