package policies

import (
	"errors"
	"fmt"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
)

// ModelInfo is what Inspect reads from an ONNX file without loading it into
// a runtime: metadata_props, graph input/output names and the op types used.
type ModelInfo struct {
	Metadata map[string]string
	Inputs   []string
	Outputs  []string
	// Ops lists the distinct op types of the main graph, sorted.
	Ops []string
}

// ONNX protobuf field numbers (onnx.proto3) read by Inspect.
const (
	modelGraph    = 7  // ModelProto.graph
	modelMetadata = 14 // ModelProto.metadata_props
	graphNode     = 1  // GraphProto.node
	graphInput    = 11 // GraphProto.input
	graphOutput   = 12 // GraphProto.output
	nodeOpType    = 4  // NodeProto.op_type
	valueName     = 1  // ValueInfoProto.name
	entryKey      = 1  // StringStringEntryProto.key
	entryValue    = 2  // StringStringEntryProto.value
)

// Inspect parses the parts of an ONNX model that a bundle check needs. It
// reads the protobuf wire format directly and fails on malformed bytes.
func Inspect(model []byte) (*ModelInfo, error) {
	if len(model) == 0 {
		return nil, errors.New("policies: empty ONNX model")
	}
	info := &ModelInfo{Metadata: map[string]string{}}
	sawGraph := false
	err := eachField(model, func(num protowire.Number, typ protowire.Type, val []byte) error {
		switch {
		case num == modelGraph && typ == protowire.BytesType:
			sawGraph = true
			return inspectGraph(val, info)
		case num == modelMetadata && typ == protowire.BytesType:
			var k, v string
			err := eachField(val, func(n protowire.Number, t protowire.Type, b []byte) error {
				if t == protowire.BytesType && n == entryKey {
					k = string(b)
				} else if t == protowire.BytesType && n == entryValue {
					v = string(b)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("metadata entry: %w", err)
			}
			info.Metadata[k] = v
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("policies: not an ONNX model: %w", err)
	}
	if !sawGraph {
		return nil, errors.New("policies: not an ONNX model: no graph")
	}
	return info, nil
}

func inspectGraph(g []byte, info *ModelInfo) error {
	ops := map[string]bool{}
	err := eachField(g, func(num protowire.Number, typ protowire.Type, val []byte) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case graphNode:
			return eachField(val, func(n protowire.Number, t protowire.Type, b []byte) error {
				if n == nodeOpType && t == protowire.BytesType {
					ops[string(b)] = true
				}
				return nil
			})
		case graphInput, graphOutput:
			name := ""
			err := eachField(val, func(n protowire.Number, t protowire.Type, b []byte) error {
				if n == valueName && t == protowire.BytesType {
					name = string(b)
				}
				return nil
			})
			if num == graphInput {
				info.Inputs = append(info.Inputs, name)
			} else {
				info.Outputs = append(info.Outputs, name)
			}
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("graph: %w", err)
	}
	for op := range ops {
		info.Ops = append(info.Ops, op)
	}
	sort.Strings(info.Ops)
	return nil
}

// eachField calls f for every top-level field of a protobuf message; val is
// the payload of length-delimited fields and nil otherwise.
func eachField(b []byte, f func(num protowire.Number, typ protowire.Type, val []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var val []byte
		if typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			val, n = v, m
		} else {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return protowire.ParseError(n)
			}
		}
		if err := f(num, typ, val); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}
