// Command admpo trains, exports, benchmarks and serves Any-step Dynamics
// Model policies. Run `admpo help` for the list of commands.
package main
