// Package remote plays environments that run in another process or on
// another machine: a client (Dial, Make, Open) that drives an environment
// server as an envs.Env, and a server helper (Serve) that serves
// environments written in Go, built-in tasks included (Builtin). The wire
// protocol is length-prefixed binary frames over TCP or a Unix socket,
// specified in docs/remote-envs.md; python/admpo_env serves any Python
// object with the Gymnasium API over the same protocol.
package remote
