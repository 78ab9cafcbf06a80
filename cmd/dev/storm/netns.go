package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// netnsCommand is `storm netns MCO-BINARY FLAGS...`: the storm, run by
// reexecInNetns in a user and network namespace of its own, with
// OpenShift's server MCO-BINARY beside mcs and the bare server.
const netnsCommand = "netns"

// skipMCO is why OpenShift's server is left out of a run; the storm goes
// on without it.
type skipMCO struct{ why string }

func (s skipMCO) Error() string { return s.why }

// reexecInNetns runs the whole storm again in a new user and network
// namespace, whose only interface is its own loopback: OpenShift's
// machine-config-server listens on every interface on fixed ports, and
// there it can reach nothing but the storm's nodes. The three servers and
// the nodes share that namespace, so they are measured alike. A
// -mco-src tree is built first, here, into dir.
// A skipMCO error: the storm was not run and should run without OpenShift's server.
func reexecInNetns(ctx context.Context, dir string, o options, args []string, stdout io.Writer) error {
	bin := o.mcoBin
	if o.mcoSrc != "" {
		var err error
		if bin, err = buildMCO(ctx, o.mcoSrc, dir, stdout); err != nil {
			return skipMCO{err.Error()}
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, self, append([]string{netnsCommand, bin}, args...)...)
	cmd.Stdout, cmd.Stderr = stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	// On an interrupt the storm stops its servers itself.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Start(); err != nil {
		return skipMCO{fmt.Sprintf("no network namespace of its own (%v): OpenShift's server listens on every "+
			"interface, so the storm runs it only in one (are unprivileged user namespaces off? "+
			"sysctl kernel.unprivileged_userns_clone, user.max_user_namespaces)", err)}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return errGoalMissed
	case err != nil:
		return fmt.Errorf("the storm in its network namespace: %w", err)
	}
	return nil
}

// runInNetns is `storm netns MCO-BINARY FLAGS...`, in the namespace
// reexecInNetns made: loopback up, then the storm with OpenShift's server.
func runInNetns(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) < 1 {
		return errors.New("usage: storm netns MCO-BINARY [FLAGS]")
	}
	if err := isolated(); err != nil {
		return err
	}
	if err := loopbackUp(); err != nil {
		return fmt.Errorf("bringing up lo: %w", err)
	}
	o, err := parseFlags(args[1:])
	if err != nil {
		return err
	}
	o.mcoSrc, o.mcoBin, o.inNetns = "", args[0], true
	return runParsed(ctx, o, args[1:], stdout)
}

// isolated checks that this network namespace has no interface but lo,
// before a server that listens on all of them starts.
func isolated() error {
	ifs, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, i := range ifs {
		if i.Name != "lo" {
			return fmt.Errorf("network namespace has interface %s: not a private one", i.Name)
		}
	}
	return nil
}

// loopbackUp sets lo up, as `ip link set lo up` does; a new network
// namespace's lo is down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
