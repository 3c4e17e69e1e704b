package iobind

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// The names of GatherModel's inputs and outputs.
const (
	GatherX = "x"       // float32 [n, width]: the rows to gather from
	GatherA = "index_a" // int64 [a]: the rows of x that make output GatherOutA
	GatherB = "index_b" // int64 [b]: the rows of x that make output GatherOutB
	// GatherOutA is x[index_a], float32 [a, width].
	GatherOutA = "a"
	// GatherOutB is x[index_b], float32 [b, width].
	GatherOutB = "b"
)

// GatherModel returns an ONNX model (opset 17) of two Gather nodes over the
// rows of one float32 tensor x [n, width]: a = x[index_a] and b =
// x[index_b]. Bound to device buffers it moves rows of state from one
// buffer to others without leaving the device; n, a and b are free.
func GatherModel(width int) ([]byte, error) {
	if width <= 0 {
		return nil, fmt.Errorf("iobind: gather model: width %d", width)
	}
	const (
		tFloat = 1 // TensorProto.FLOAT
		tInt64 = 7 // TensorProto.INT64
	)
	w := int64Dim(int64(width))
	node := func(in, out, name string) []byte {
		var b []byte
		b = appendString(b, 1, GatherX)
		b = appendString(b, 1, in)
		b = appendString(b, 2, out)
		b = appendString(b, 3, name)
		b = appendString(b, 4, "Gather")
		var attr []byte
		attr = appendString(attr, 1, "axis")
		attr = protowire.AppendTag(attr, 3, protowire.VarintType)
		attr = protowire.AppendVarint(attr, 0)
		attr = protowire.AppendTag(attr, 20, protowire.VarintType)
		attr = protowire.AppendVarint(attr, 2) // AttributeProto.INT
		return appendBytes(b, 5, attr)
	}
	var g []byte
	g = appendBytes(g, 1, node(GatherA, GatherOutA, "gather_a"))
	g = appendBytes(g, 1, node(GatherB, GatherOutB, "gather_b"))
	g = appendString(g, 2, "admpo_gather")
	g = appendBytes(g, 11, valueInfo(GatherX, tFloat, paramDim("n"), w))
	g = appendBytes(g, 11, valueInfo(GatherA, tInt64, paramDim("a")))
	g = appendBytes(g, 11, valueInfo(GatherB, tInt64, paramDim("b")))
	g = appendBytes(g, 12, valueInfo(GatherOutA, tFloat, paramDim("a"), w))
	g = appendBytes(g, 12, valueInfo(GatherOutB, tFloat, paramDim("b"), w))
	var m []byte
	m = protowire.AppendTag(m, 1, protowire.VarintType)
	m = protowire.AppendVarint(m, 8) // ir_version
	m = appendString(m, 2, "admpo")
	m = appendBytes(m, 7, g)
	var opset []byte
	opset = appendString(opset, 1, "")
	opset = protowire.AppendTag(opset, 2, protowire.VarintType)
	opset = protowire.AppendVarint(opset, 17)
	return appendBytes(m, 8, opset), nil
}

func appendString(b []byte, field protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendBytes(b []byte, field protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

// int64Dim and paramDim are TensorShapeProto.Dimension messages.
func int64Dim(v int64) []byte {
	b := protowire.AppendTag(nil, 1, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

func paramDim(name string) []byte { return appendString(nil, 2, name) }

// valueInfo is a ValueInfoProto of a tensor of elem type and dims.
func valueInfo(name string, elem uint64, dims ...[]byte) []byte {
	var shape []byte
	for _, d := range dims {
		shape = appendBytes(shape, 1, d)
	}
	var tensor []byte
	tensor = protowire.AppendTag(tensor, 1, protowire.VarintType)
	tensor = protowire.AppendVarint(tensor, elem)
	tensor = appendBytes(tensor, 2, shape)
	typ := appendBytes(nil, 1, tensor)
	b := appendString(nil, 1, name)
	return appendBytes(b, 2, typ)
}
