// Command fingerprint prints a run directory's deterministic content as one
// SHA-256 line per item, so two runs of the same command (before and after a
// refactor) can be compared with diff. Wall-clock values are left out: the
// wall_s column, progress.jsonl's "time" and every JSON key that is a
// duration ("wall_s", "seconds", keys ending in "_s", "Wall", "Time").
// Checkpoint sections are hashed one by one, the "state" section after the
// same removal, so a difference names the section.
//
// Paths are made relative: every occurrence of $FINGERPRINT_ROOT (e.g. the
// directory holding the runs) is replaced by "ROOT" before hashing, and the
// bundle manifest's "exported" time is left out, so recordings made in two
// places compare equal. Subdirectories (snapshots/) are included, except
// bundle/, which is fingerprinted on its own.
//
// Usage: FINGERPRINT_ROOT=DIR go run ./scripts/fingerprint RUN_DIR...   (prints to stdout)
package main
