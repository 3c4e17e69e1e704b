// Command admfitexp fits the ADM alone on a data set for a fixed number of
// Adam steps and prints the holdout error per k and per dimension.
package main
