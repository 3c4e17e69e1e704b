package cudaep_test

import (
	"strings"
	"testing"

	"github.com/admpo/admpo/infer/cudaep"
)

func TestPickCUDA(t *testing.T) {
	cpu := cudaep.Device{Index: 0, EP: "CPUExecutionProvider", Vendor: "Microsoft", Hardware: "cpu", VendorID: 0x8086}
	cuda := cudaep.Device{Index: 1, EP: cudaep.EPName, Vendor: "Microsoft", Hardware: "gpu", VendorID: cudaep.NVIDIAVendorID, DeviceID: 0x2330}
	other := cudaep.Device{Index: 1, EP: "CudaPluginExecutionProvider", Vendor: "NVIDIA", Hardware: "gpu", VendorID: cudaep.NVIDIAVendorID}
	amd := cudaep.Device{Index: 2, EP: "MIGraphXExecutionProvider", Hardware: "gpu", VendorID: 0x1002}
	for _, c := range []struct {
		name string
		devs []cudaep.Device
		want cudaep.Device
	}{
		{"by name", []cudaep.Device{cpu, other, cuda}, cuda},
		{"NVIDIA GPU under another name", []cudaep.Device{cpu, amd, other}, other},
	} {
		got, err := cudaep.PickCUDA(c.devs)
		if err != nil || got != c.want {
			t.Errorf("%s: PickCUDA = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	for _, devs := range [][]cudaep.Device{nil, {cpu, amd}} {
		_, err := cudaep.PickCUDA(devs)
		if err == nil || !strings.Contains(err.Error(), "devices found") {
			t.Fatalf("PickCUDA(%v) = %v, want an error listing the devices", devs, err)
		}
		for _, d := range devs {
			if !strings.Contains(err.Error(), d.String()) {
				t.Errorf("error %q does not list %s", err, d)
			}
		}
	}
}
