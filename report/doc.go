// Package report turns run directories into learning curves: it groups runs
// by algorithm, averages their evaluation returns over seeds with standard
// errors, draws the curves with gonum/plot and prints a summary table.
package report
