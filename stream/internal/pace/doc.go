// Package pace paces a two-cadence stream's discovery beside its checks:
// when a discovery starts and which check merges it (Pacer), and how its
// workers yield the CPU to the checks (Gate). Package stream's consumer,
// evaluator and discoverer drive both under the stream's mailbox lock.
//
//	records  ──────┬───────┬───────┬───────┬───────┬───────┬──────▶
//	checks         C1      C2      C3      C4      C5      C6
//	discovery      D1 ════════════════▶    D2 ═══════════════▶
//	merged into                            C4                      C7
//
// With a fixed cadence (discover-every D) the discovery of the window
// ending at record S is merged into the check of the window ending at
// S + D, when the next one starts: the merge point depends on record
// numbers alone, so a run gives the same events however long discovery
// takes. With auto the schedule follows the measured costs (Pacer), except
// behind (a backlog or a burst: a lag of a window or more), where
// discoveries keep the bound's fixed points, merged a bound later, as
// replay runs them.
//
// Discovery never starves: the consumer does not hand over a check past
// an open discovery's wait point (its merge point, or with auto caught up
// its bound) before that discovery has ended. Consumption then waits:
// Kafka holds the records, the lag grows, and the check is handed over,
// and the discovery merged, as soon as it ends.
package pace
