// Package envs provides admpo's MuJoCo tasks (hopper, walker2d, halfcheetah,
// ant, humanoid, inverted-pendulum) with Gymnasium v4 semantics, through a
// small cgo layer over MuJoCo 2.2.2. The MJCF models are admpo's own files,
// embedded in the binary. Physics runs in float64.
//
// A task can also come from a task file (YAML, LoadTaskFile): an MJCF model
// and the task on it (frame skip, observation, reward terms, termination,
// reset noise, episode limit). The built-in tasks ship as such files
// (tasks/*.yaml, embedded), which a test holds to the Go definitions step
// for step.
//
// Above the simulator it holds the one way admpo plays a task: an Actor
// chooses actions, Play runs one episode and Evaluate runs a series of them
// (training evaluations, data collection, `admpo eval`, `admpo envs run`);
// Env.SetFromObs restores the simulator from an observation. An Env can
// also play a Backend in place of the simulator (NewBackendEnv): a remote
// environment, package envs/remote.
package envs
