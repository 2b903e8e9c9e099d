//go:build linux

package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupV1CPU is the cgroup v1 cpu hierarchy, cgroupV2 the unified one.
const (
	cgroupV1CPU = "/sys/fs/cgroup/cpu"
	cgroupV2    = "/sys/fs/cgroup"
	cpuPeriodUS = 100000
)

// cgroupRoot returns where the hosts' CPU cgroups go and whether it is
// cgroup v2, or an error wrapping ErrUnavailable.
func cgroupRoot() (string, bool, error) {
	if _, err := os.Stat(filepath.Join(cgroupV1CPU, "cpu.cfs_quota_us")); err == nil {
		return cgroupV1CPU, false, nil
	}
	if b, err := os.ReadFile(filepath.Join(cgroupV2, "cgroup.controllers")); err == nil && strings.Contains(" "+string(b), " cpu") {
		return cgroupV2, true, nil
	}
	return "", false, fmt.Errorf("%w: no cgroup cpu controller (cgroup v1 %s or v2 %s)", ErrUnavailable, cgroupV1CPU, cgroupV2)
}

// LimitCPU gives every host a CPU quota of cores (above 0; 0.5 is half a
// core) from now on: a cgroup per host, which the processes Command
// starts join before they run. It simulates hosts with CPUs of their
// own on a machine with fewer: one host's processes can no longer use the
// whole machine. Close removes the cgroups. An error wrapping
// ErrUnavailable means the machine has no cgroup cpu controller here.
func (h *Hosts) LimitCPU(cores float64) error {
	if !(cores > 0) || cores > 1024 {
		return fmt.Errorf("netns: CPU limit %g: want above 0 and at most 1024 cores", cores)
	}
	root, v2, err := cgroupRoot()
	if err != nil {
		return err
	}
	if v2 {
		_ = os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte("+cpu"), 0o644) // best effort: it may be on
	}
	quota := strconv.Itoa(max(int(cores*cpuPeriodUS), 1000))
	for i := range h.names {
		dir := filepath.Join(root, h.names[i])
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("netns: %w", err)
		}
		h.cgroups = append(h.cgroups, dir)
		if v2 {
			err = os.WriteFile(filepath.Join(dir, "cpu.max"), []byte(quota+" "+strconv.Itoa(cpuPeriodUS)), 0o644)
		} else {
			err = os.WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), []byte(strconv.Itoa(cpuPeriodUS)), 0o644)
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), []byte(quota), 0o644)
			}
		}
		if err != nil {
			return fmt.Errorf("netns: CPU limit of host %d: %w", i, err)
		}
	}
	return nil
}

// removeCgroups removes the hosts' CPU cgroups; a cgroup with a process
// still in it stays (rmdir refuses), and that is an error.
func (h *Hosts) removeCgroups() error {
	var first error
	for _, dir := range h.cgroups {
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
			first = fmt.Errorf("netns: remove %s: %w", dir, err)
		}
	}
	h.cgroups = nil
	return first
}

// sweepCgroups removes the CPU cgroups of processes that no longer run.
func sweepCgroups(dead func(string) bool) {
	root, _, err := cgroupRoot()
	if err != nil {
		return
	}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if e.IsDir() && dead(e.Name()) {
			_ = os.Remove(filepath.Join(root, e.Name()))
		}
	}
}

// Throttled returns, for host i's CPU cgroup (LimitCPU), how many
// scheduling periods of 100 ms its processes ran in and in how many of
// them the quota stopped them: the quota bounded the host when throttled
// is a large part of periods.
func (h *Hosts) Throttled(i int) (periods, throttled int64, err error) {
	if i < 0 || i >= len(h.cgroups) {
		return 0, 0, fmt.Errorf("netns: host %d has no CPU limit", i)
	}
	b, err := os.ReadFile(filepath.Join(h.cgroups[i], "cpu.stat"))
	if err != nil {
		return 0, 0, fmt.Errorf("netns: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "nr_periods":
			periods = n
		case "nr_throttled":
			throttled = n
		}
	}
	return periods, throttled, nil
}
