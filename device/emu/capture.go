package emu

import (
	"fmt"

	"github.com/admpo/admpo/device"
)

// graph is a recorded list of launches and products, each replayed through
// Launch or Gemm, so a replay checks its buffers again (freed, foreign).
type graph struct {
	d     *Device
	ops   []func() error
	freed bool
}

// capturing returns ErrCapturing for op while a capture is open.
func (d *Device) capturing(op string) error {
	if d.rec != nil {
		return fmt.Errorf("emu: %s: %w", op, device.ErrCapturing)
	}
	return nil
}

// BeginCapture starts recording launches and products instead of running
// them.
func (d *Device) BeginCapture() error {
	if d.closed {
		return fmt.Errorf("emu: begin capture: %w", device.ErrClosed)
	}
	if err := d.capturing("begin capture"); err != nil {
		return err
	}
	d.rec = &graph{d: d}
	return nil
}

// EndCapture stops recording and returns what was recorded.
func (d *Device) EndCapture() (device.Graph, error) {
	if d.closed {
		return nil, fmt.Errorf("emu: end capture: %w", device.ErrClosed)
	}
	if d.rec == nil {
		return nil, fmt.Errorf("emu: end capture: no capture was begun: %w", device.ErrArgs)
	}
	g := d.rec
	d.rec = nil
	return g, nil
}

// Launch runs the recorded work in its order.
func (g *graph) Launch() error {
	if g.freed {
		return fmt.Errorf("emu: graph launch: %w", device.ErrFreed)
	}
	if err := g.d.capturing("graph launch"); err != nil {
		return err
	}
	for i, op := range g.ops {
		if err := op(); err != nil {
			return fmt.Errorf("emu: graph launch, operation %d of %d: %w", i+1, len(g.ops), err)
		}
	}
	return nil
}

// Free releases the graph.
func (g *graph) Free() error {
	if g.freed {
		return fmt.Errorf("emu: graph free: %w", device.ErrFreed)
	}
	g.freed, g.ops = true, nil
	return nil
}
