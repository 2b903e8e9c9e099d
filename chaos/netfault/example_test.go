package netfault_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/chaos/netfault"
	"github.com/idembench/idembench/history"
)

// A partition held for 100ms in front of a local echo server, with a fake
// clock so the recorded window is predictable.
func ExampleProxy_Inject() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()

	var now int64
	clock := func() int64 { now += 1000; return now }
	p, err := netfault.New(context.Background(), l.Addr().String(), netfault.Options{Clock: clock})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()

	err = p.Inject(context.Background(), chaos.Fault{Kind: history.FaultPartition, Duration: 100 * time.Millisecond})
	fmt.Println(err)
	for _, w := range p.Windows() {
		fmt.Printf("%s %s from %d to %d\n", w.Fault, w.Label, w.Call, w.Return)
	}
	// Output:
	// <nil>
	// partition net partition from 1000 to 2000
}
