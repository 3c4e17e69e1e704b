package train

import "errors"

// NewEnsembleDynamics is MBPO's ensemble for the loops (not wired yet).
func NewEnsembleDynamics(cfg OnlineConfig, od, ad int) (Dynamics, error) {
	return nil, errors.New("train: the MBPO ensemble is not wired into the loop yet")
}
