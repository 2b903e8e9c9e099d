package reports

import (
	"os"
	"runtime"
)

// Machine describes the computer a run ran on, so figures from different
// machines are not compared by mistake.
type Machine struct {
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	NumCPU    int    `json:"num_cpu"`
	GoVersion string `json:"go_version"`
	// Hostname is empty when the system does not report one.
	Hostname string `json:"hostname"`
}

// CurrentMachine describes the machine this process runs on.
func CurrentMachine() Machine {
	host, _ := os.Hostname()
	return Machine{
		GOOS:      runtime.GOOS,
		GOARCH:    runtime.GOARCH,
		NumCPU:    runtime.NumCPU(),
		GoVersion: runtime.Version(),
		Hostname:  host,
	}
}

// String returns "linux/amd64, 8 CPUs, go1.26.0, host".
func (m Machine) String() string {
	s := m.GOOS + "/" + m.GOARCH + ", " + plural(m.NumCPU, "CPU") + ", " + m.GoVersion
	if m.Hostname != "" {
		s += ", " + m.Hostname
	}
	return s
}
