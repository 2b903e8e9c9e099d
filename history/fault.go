package history

// Fault returns the operation of one fault window: label describes it, and
// it lasts from start to end on the run's timeline (end == start for an
// instant, such as a crash). It belongs to no client and no worker; OnWorker
// and OnKey say whom it hit. Every fault window of a history is built here.
func Fault(label string, start, end int64) Op {
	return Op{Kind: KindFault, Client: -1, Worker: -1, Label: label, Call: start, Return: end}
}

// OnWorker returns op as it happened to worker process i.
func (op Op) OnWorker(i int) Op {
	op.Worker = i
	return op
}

// OnKey returns op as it hit the holder of key with the given fencing token.
func (op Op) OnKey(key string, token uint64) Op {
	op.Key, op.Token = key, token
	return op
}
