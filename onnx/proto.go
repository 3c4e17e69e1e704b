package onnx

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// This file is a minimal protobuf encoder for the subset of onnx.proto
// (IR version 8) that admpo writes. Field numbers follow onnx/onnx.proto.

// DataType is an ONNX TensorProto.DataType element type.
type DataType int32

// The element types admpo uses.
const (
	Float DataType = 1 // TensorProto.FLOAT
	Int32 DataType = 6 // TensorProto.INT32
	Int64 DataType = 7 // TensorProto.INT64
	Bool  DataType = 9 // TensorProto.BOOL
)

// AttributeProto.AttributeType values.
const (
	attrFloat  = 1
	attrInt    = 2
	attrString = 3
	attrTensor = 4
	attrFloats = 6
	attrInts   = 7
)

// tensor is a TensorProto holding its data as little-endian raw_data.
type tensor struct {
	name  string
	dims  []int64
	dtype DataType
	raw   []byte
}

// Attr is one node attribute (AttributeProto). Build it with AttrFloat,
// AttrInt, AttrInts, AttrFloats, AttrString or AttrTensor.
type Attr struct {
	name   string
	typ    int32
	f      float32
	i      int64
	s      string
	ints   []int64
	floats []float32
	t      *tensor
}

// node is a NodeProto.
type node struct {
	inputs, outputs []string
	name, opType    string
	attrs           []Attr
}

// Dim is one dimension of a graph input or output: a fixed size, or a
// symbolic name such as "batch" when Param is set.
type Dim struct {
	Value int64
	Param string
}

// valueInfo is a ValueInfoProto describing a tensor-typed graph input/output.
type valueInfo struct {
	name  string
	dtype DataType
	dims  []Dim
}

// AttrFloat returns a FLOAT attribute.
func AttrFloat(name string, v float32) Attr { return Attr{name: name, typ: attrFloat, f: v} }

// AttrInt returns an INT attribute.
func AttrInt(name string, v int64) Attr { return Attr{name: name, typ: attrInt, i: v} }

// AttrString returns a STRING attribute.
func AttrString(name, v string) Attr { return Attr{name: name, typ: attrString, s: v} }

// AttrInts returns an INTS attribute.
func AttrInts(name string, v ...int64) Attr {
	return Attr{name: name, typ: attrInts, ints: append([]int64(nil), v...)}
}

// AttrFloats returns a FLOATS attribute.
func AttrFloats(name string, v ...float32) Attr {
	return Attr{name: name, typ: attrFloats, floats: append([]float32(nil), v...)}
}

// AttrTensor returns a TENSOR attribute holding a float32 tensor of the given
// shape (e.g. ConstantOfShape's value).
func AttrTensor(name string, dims []int64, data []float32) Attr {
	return Attr{name: name, typ: attrTensor, t: &tensor{dims: append([]int64(nil), dims...), dtype: Float, raw: float32Raw(data)}}
}

func float32Raw(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func int32Raw(v []int32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

func int64Raw(v []int64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

// Helpers appending one field each.

func appendStringField(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendBytesField(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendIntField(b []byte, num protowire.Number, v int64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

// appendRepeatedInts writes a proto2 (unpacked) repeated int64 field.
func appendRepeatedInts(b []byte, num protowire.Number, v []int64) []byte {
	for _, x := range v {
		b = appendIntField(b, num, x)
	}
	return b
}

// TensorProto: dims=1, data_type=2, name=8, raw_data=9.
func (t *tensor) marshal() []byte {
	var b []byte
	b = appendRepeatedInts(b, 1, t.dims)
	b = appendIntField(b, 2, int64(t.dtype))
	if t.name != "" {
		b = appendStringField(b, 8, t.name)
	}
	return appendBytesField(b, 9, t.raw)
}

// AttributeProto: name=1, f=2, i=3, s=4, t=5, floats=7, ints=8, type=20.
func (a *Attr) marshal() []byte {
	var b []byte
	b = appendStringField(b, 1, a.name)
	switch a.typ {
	case attrFloat:
		b = protowire.AppendTag(b, 2, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, math.Float32bits(a.f))
	case attrInt:
		b = appendIntField(b, 3, a.i)
	case attrString:
		b = appendStringField(b, 4, a.s)
	case attrTensor:
		b = appendBytesField(b, 5, a.t.marshal())
	case attrFloats:
		// proto2 repeated scalars are unpacked unless declared packed.
		for _, x := range a.floats {
			b = protowire.AppendTag(b, 7, protowire.Fixed32Type)
			b = protowire.AppendFixed32(b, math.Float32bits(x))
		}
	case attrInts:
		b = appendRepeatedInts(b, 8, a.ints)
	}
	return appendIntField(b, 20, int64(a.typ))
}

// NodeProto: input=1, output=2, name=3, op_type=4, attribute=5.
func (n *node) marshal() []byte {
	var b []byte
	for _, s := range n.inputs {
		b = appendStringField(b, 1, s)
	}
	for _, s := range n.outputs {
		b = appendStringField(b, 2, s)
	}
	b = appendStringField(b, 3, n.name)
	b = appendStringField(b, 4, n.opType)
	for i := range n.attrs {
		b = appendBytesField(b, 5, n.attrs[i].marshal())
	}
	return b
}

// ValueInfoProto{name=1, type=2} with TypeProto{tensor_type=1}
// -> Tensor{elem_type=1, shape=2} -> TensorShapeProto{dim=1}
// -> Dimension{dim_value=1 | dim_param=2}.
func (v *valueInfo) marshal() []byte {
	var shape []byte
	for _, d := range v.dims {
		var dim []byte
		if d.Param != "" {
			dim = appendStringField(dim, 2, d.Param)
		} else {
			dim = appendIntField(dim, 1, d.Value)
		}
		shape = appendBytesField(shape, 1, dim)
	}
	var tt []byte
	tt = appendIntField(tt, 1, int64(v.dtype))
	tt = appendBytesField(tt, 2, shape)
	var typ []byte
	typ = appendBytesField(typ, 1, tt)
	var b []byte
	b = appendStringField(b, 1, v.name)
	return appendBytesField(b, 2, typ)
}

// GraphProto: node=1, name=2, initializer=5, doc_string=10, input=11, output=12.
func (g *Graph) marshal() []byte {
	var b []byte
	for i := range g.nodes {
		b = appendBytesField(b, 1, g.nodes[i].marshal())
	}
	b = appendStringField(b, 2, g.name)
	for i := range g.inits {
		b = appendBytesField(b, 5, g.inits[i].marshal())
	}
	if g.doc != "" {
		b = appendStringField(b, 10, g.doc)
	}
	for i := range g.inputs {
		b = appendBytesField(b, 11, g.inputs[i].marshal())
	}
	for i := range g.outputs {
		b = appendBytesField(b, 12, g.outputs[i].marshal())
	}
	return b
}

// ModelProto: ir_version=1, producer_name=2, producer_version=3, graph=7,
// opset_import=8 (OperatorSetIdProto{domain=1, version=2}), metadata_props=14
// (StringStringEntryProto{key=1, value=2}).
func marshalModel(g *Graph, meta []metaEntry) []byte {
	var b []byte
	b = appendIntField(b, 1, IRVersion)
	b = appendStringField(b, 2, ProducerName)
	b = appendStringField(b, 3, Version)
	b = appendBytesField(b, 7, g.marshal())
	var op []byte
	op = appendStringField(op, 1, "")
	op = appendIntField(op, 2, OpsetVersion)
	b = appendBytesField(b, 8, op)
	for _, e := range meta {
		var kv []byte
		kv = appendStringField(kv, 1, e.key)
		kv = appendStringField(kv, 2, e.value)
		b = appendBytesField(b, 14, kv)
	}
	return b
}
