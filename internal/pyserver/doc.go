// Package pyserver starts the Python environment server (python/admpo_env)
// for tests: /usr/bin/python3 -m admpo_env MODULE:FACTORY on a free port.
package pyserver
