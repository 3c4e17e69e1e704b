// Package dynamics holds admpo's learned dynamics models as the training
// loops use them: the Any-step Dynamics Model (ADM) and MBPO's
// probabilistic ensemble behind one Model interface (fit on a replay
// buffer, export to ONNX, roll out through infer, checkpoint), sized and
// fitted from a Config, and the fits themselves (FitADM, FitEnsemble) with
// a timing benchmark of one ADM train step.
//
// The models' checkpoint sections (adm/..., ensemble/...) are part of
// admpo's run format: old checkpoints must keep loading, so their names and
// contents do not change. An unfinished fit's snapshot (FitResume) is a
// ckpt container of its own ("progress", gob-encoded; "model/...",
// "best/..."; "adam/m/<i>", "adam/v/<i>") that the offline run stores as
// one section of its checkpoint.
package dynamics
