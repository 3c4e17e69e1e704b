# run_lock.sh: the lock of a run directory, sourced by the run scripts.
#
# A run DIR is locked with flock(2) on DIR.lock, as `admpo sweep` locks it, so
# scripts and sweeps started side by side never run one directory twice (a
# check-then-write pid file let two chains started in the same second both
# take a run). The lock goes with its holder's process: no stale locks after a
# crash or a machine restart. DIR.lock holds the holder's pid for people.

# run_lock DIR: take DIR's lock for this shell; status 1 when another process
# holds it, 2 (with a message) when the lock file cannot be made.
run_lock() {
  local f=$1.lock
  mkdir -p "$(dirname "$f")" || { echo "run_lock: cannot make $(dirname "$f")" >&2; return 2; }
  while :; do
    exec {RUN_LOCK_FD}>>"$f" || { echo "run_lock: cannot open $f" >&2; return 2; }
    if ! flock -n "$RUN_LOCK_FD"; then
      exec {RUN_LOCK_FD}>&-
      return 1
    fi
    # Its last holder may have removed the file between our open and our
    # lock: then we hold a lock nobody else looks at; open it again.
    if [ "$(stat -c %d:%i "$f" 2>/dev/null)" = "$(stat -L -c %d:%i "/proc/self/fd/$RUN_LOCK_FD")" ]; then
      echo $$ > "$f"
      return 0
    fi
    exec {RUN_LOCK_FD}>&-
  done
}

# run_unlock DIR: release DIR's lock (the file goes first, then the lock).
run_unlock() {
  rm -f "$1.lock"
  exec {RUN_LOCK_FD}>&-
}
