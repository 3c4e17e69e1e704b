// Package stats holds the few statistics admpo's studies and runtimes share:
// correlation coefficients, ranks and a finiteness check.
package stats
