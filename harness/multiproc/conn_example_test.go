package multiproc_test

import (
	"context"
	"fmt"
	"net"

	"github.com/idembench/idembench/harness/multiproc"
)

// A coordinator and a worker over an in-memory transport (a worker
// process uses multiproc.Stdio, its coordinator multiproc.StartProc): the
// hello carries the spec, then the worker calls the coordinator and sends
// it an event.
func ExampleConn() {
	a, b := net.Pipe()
	coordinator, worker := multiproc.NewConn(a), multiproc.NewConn(b)

	type spec struct{ Clients int }
	go func() { _ = coordinator.SendHello("demo", spec{Clients: 4}) }()
	var s spec
	if err := worker.ReadHello("demo", &s); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("worker got", s.Clients, "clients")

	done := make(chan struct{})
	go func() {
		defer close(done)
		coordinator.Serve(context.Background(), func(_ context.Context, method string, body any, event bool) (any, error) {
			if event {
				fmt.Println("coordinator got event", method, body)
				return nil, nil
			}
			return fmt.Sprint("stopped ", body.(multiproc.PauseRequest).Key), nil
		})
	}()
	go worker.Serve(context.Background(), nil) // the replies to its calls

	answer, err := worker.Call(context.Background(), multiproc.MethodPause, multiproc.PauseRequest{Key: "k1"})
	fmt.Println("worker got", answer, err)
	_ = worker.Notify(multiproc.MethodDone, "")
	worker.Close()
	<-done
	// Output:
	// worker got 4 clients
	// worker got stopped k1 <nil>
	// coordinator got event done
}
