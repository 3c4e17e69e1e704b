// Package trainfix holds test fixtures of the packages above train
// (experiments, the admpo command): random hopper data sets and offline runs
// small enough for a unit test. Only tests import it; train's own tests keep
// their copies (train cannot import what imports train).
package trainfix
