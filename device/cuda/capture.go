//go:build admpo_cuda

package cuda

/*
#include <cuda.h>

// admpoEndCapture ends the stream's capture and instantiates its graph; the
// graph itself is not kept.
static CUresult admpoEndCapture(CUstream s, CUgraphExec *exec) {
	CUgraph g = NULL;
	CUresult r = cuStreamEndCapture(s, &g);
	if (r != CUDA_SUCCESS) {
		if (g != NULL) cuGraphDestroy(g);
		return r;
	}
	r = cuGraphInstantiateWithFlags(exec, g, 0);
	cuGraphDestroy(g);
	return r;
}
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/admpo/admpo/device"
)

// graph is an instantiated CUDA graph of the device's stream.
type graph struct {
	d    *Device
	exec C.CUgraphExec
}

// capturable reports whether the operation op may run while the stream
// captures: launches and products are recorded, ending the capture and
// closing the device are allowed, and nothing else.
func capturable(op string) bool {
	return strings.HasPrefix(op, "launch ") || op == "gemm" || op == "gemm batched" || op == "end capture" ||
		op == "close"
}

// cuErr describes a CUresult.
func cuErr(what string, r C.CUresult) error {
	var name *C.char
	if C.cuGetErrorName(r, &name) != C.CUDA_SUCCESS || name == nil {
		return fmt.Errorf("%s: CUresult %d", what, int(r))
	}
	return fmt.Errorf("%s: %s", what, C.GoString(name))
}

func (d *Device) cStream() C.CUstream { return *(*C.CUstream)(unsafe.Pointer(&d.stream)) }

// BeginCapture starts recording the stream's launches and products into a
// CUDA graph (relaxed mode: other threads' CUDA calls are not refused).
// Run the work once without capture first, so that cuBLAS has set itself
// up for its shapes.
func (d *Device) BeginCapture() error {
	leave, err := d.enter("begin capture")
	if err != nil {
		return err
	}
	defer leave()
	if r := C.cuStreamBeginCapture(d.cStream(), C.CU_STREAM_CAPTURE_MODE_RELAXED); r != C.CUDA_SUCCESS {
		return fmt.Errorf("cuda: %w", cuErr("cuStreamBeginCapture", r))
	}
	d.capture = true
	return nil
}

// EndCapture ends the recording and returns the instantiated graph.
func (d *Device) EndCapture() (device.Graph, error) {
	if !d.capture {
		return nil, fmt.Errorf("cuda: end capture: no capture was begun: %w", device.ErrArgs)
	}
	leave, err := d.enter("end capture")
	if err != nil {
		return nil, err
	}
	defer leave()
	d.capture = false
	g := &graph{d: d}
	if r := C.admpoEndCapture(d.cStream(), &g.exec); r != C.CUDA_SUCCESS {
		return nil, fmt.Errorf("cuda: %w", cuErr("end capture", r))
	}
	if d.graphs == nil {
		d.graphs = map[*graph]struct{}{}
	}
	d.graphs[g] = struct{}{}
	return g, nil
}

// abandonCapture ends an open capture and drops its graph (Close).
func (d *Device) abandonCapture() error {
	if !d.capture {
		return nil
	}
	d.capture = false
	var g C.CUgraph
	if r := C.cuStreamEndCapture(d.cStream(), &g); r != C.CUDA_SUCCESS {
		return cuErr("abandoning a capture", r)
	}
	if g != nil {
		C.cuGraphDestroy(g)
	}
	return nil
}

// Launch queues the graph's work on the device's stream.
func (g *graph) Launch() error {
	if g.exec == nil {
		return fmt.Errorf("cuda: graph launch: %w", device.ErrFreed)
	}
	leave, err := g.d.enter("graph launch")
	if err != nil {
		return err
	}
	defer leave()
	if r := C.cuGraphLaunch(g.exec, g.d.cStream()); r != C.CUDA_SUCCESS {
		return fmt.Errorf("cuda: %w", cuErr("cuGraphLaunch", r))
	}
	return nil
}

// Free releases the graph.
func (g *graph) Free() error {
	if g.exec == nil {
		return fmt.Errorf("cuda: graph free: %w", device.ErrFreed)
	}
	leave, err := g.d.enter("graph free")
	if err != nil {
		return err
	}
	defer leave()
	delete(g.d.graphs, g)
	return g.destroy()
}

func (g *graph) destroy() error {
	if g.exec == nil {
		return nil
	}
	r := C.cuGraphExecDestroy(g.exec)
	g.exec = nil
	if r != C.CUDA_SUCCESS {
		return cuErr("cuGraphExecDestroy", r)
	}
	return nil
}
