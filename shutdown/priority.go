package shutdown

// The priorities of the cleanup hooks Stint's own programs add
// (Hook.Priority: lower runs first), named once, each with the reason it
// comes where it does. An embedder's hook picks its place among them.
const (
	// PriorityHTTP: the API stops first, so that nothing new is submitted
	// or asked of a runner whose workers are stopping.
	PriorityHTTP = 10
	// PrioritySubmit: runner batch's submission ends before the workers
	// stop, so that nothing is submitted to a pool that has stopped.
	PrioritySubmit = 15
	// PriorityWorkers: the worker pool stops; every attempt is recorded
	// (or suspended, its snapshot stored) before what follows runs.
	PriorityWorkers = 20
	// PriorityOutputs: runner batch writes the outputs of the attempts
	// the workers recorded, before the sandbox and the store close.
	PriorityOutputs = 25
	// PrioritySandbox: the sandbox runtime closes once no guest runs.
	PrioritySandbox = 30
	// PriorityStore: the store closes after every write of the workers,
	// the batch and the runner's own bookkeeping.
	PriorityStore = 90
	// PriorityLogs: the logs are flushed last, after everything that logs.
	PriorityLogs = 100
)
