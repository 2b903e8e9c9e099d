package consume_test

import (
	"context"
	"fmt"
	"os"

	"github.com/idembench/idembench/consume"
)

// A crash-before-ack run of the reference configuration (fenced sink and
// recovery) on RabbitMQ. It needs a broker, so it is compiled, not run.
func ExampleRun() {
	res, err := consume.Run(context.Background(), consume.Config{
		Broker:   consume.RabbitMQ,
		URL:      "amqp://guest:guest@127.0.0.1:5672/",
		Recovery: true,
		Messages: 200,
		Seed:     1,
		Faults:   consume.Faults{CrashBeforeAck: 3},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = consume.WriteSummary(os.Stdout, res)
	fmt.Println(res.Report.Verdict)
}
