// Package experiments reproduces the paper's model studies on offline data
// sets: the compounding error of open-loop model roll-outs (ADM with its
// ADM-Roll rule, the ensemble and the bootstrapping RNN), the correlation
// between each model's uncertainty and its true one-step error measured in
// the MuJoCo task, and ADMPO-OFF's sensitivity to the maximum backtracking
// length m. Every study writes a CSV, PNG plots and a printed summary
// (`admpo experiment ...`). DiagnoseOffline measures a finished offline
// run's model and penalty against the simulator where its policy goes
// (`admpo train offline --diagnose`).
package experiments
