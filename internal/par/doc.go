// Package par runs the parallel loops of qgtc's kernels on a team of worker
// goroutines that stay awake for a short while between parallel regions.
//
// Why: starting goroutines per loop and waiting on a sync.WaitGroup costs
// two wake-ups of parked OS threads per region (the helper's at the start,
// the caller's at the end). On the 2-core VM this project is measured on, a
// wake-up takes 30-40 µs (BenchmarkWakeLag), so a 64-block loop of 315 µs of work ran in
// 222 µs on 2 cores (1.42×) instead of 158 µs. With a team whose members
// spin before parking (as OpenMP runtimes do, OMP_WAIT_POLICY / blocktime),
// the same loop runs in 159 µs (1.98×): `GOMAXPROCS=c go test -run '^$'
// -bench . -cpu c ./internal/par`, c = 1 and 2, shows both side by side.
//
// The cost: an idle member polls for up to Spin after each region, and that
// polling is process CPU time. Where regions follow each other closely (a
// GNN pass) the process's CPU time is about cores × wall time whatever the
// work, so CPU-time figures (cpu-ms/pass, bitMAC/cpucyc) count the polling;
// compare wall times there.
//
// Correctness never depends on the team: Run calls body once for each
// participant index whether the team is awake, asleep, busy with another
// caller's region (nested or concurrent use) or absent (GOMAXPROCS = 1);
// only how much runs at once changes.
package par
