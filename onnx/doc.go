// Package onnx exports admpo's networks (models.Actor, models.Critic,
// models.ADM, models.Ensemble) as ONNX files for ONNX Runtime. It writes the
// protobuf directly with protowire, so it registers no protobuf names and
// links beside github.com/owulveryck/onnx-go.
//
// Every model uses IR version 8 and opset ai.onnx 17, float32 data and a
// symbolic first dimension "batch". The graphs' inputs and outputs (names,
// order and shapes for each model kind), the metadata keys and the model
// kinds are described and named in package onnx/schema, which the runtimes
// (infer, policies) share without linking this package.
//
// Metadata (metadata_props) always holds admpo_model, admpo_version, obs_dim
// and act_dim, plus the schema.Meta* keys of each kind; callers add their
// own keys (e.g. "task").
package onnx

// Format constants written into every model.
const (
	IRVersion    = 8       // ONNX IR version (onnx 1.12 and ONNX Runtime 1.30 read it)
	OpsetVersion = 17      // ai.onnx opset (the newest onnx 1.12 knows)
	ProducerName = "admpo" // ModelProto.producer_name
	Version      = "0.1.0" // admpo version written as producer_version and admpo_version
)
