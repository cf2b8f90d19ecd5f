// Package eval is the evaluation of a stream's window, shared by the
// monitor's evaluator and discoverer (package stream) and by a replay
// (Replay, stream.Replayer), so that both run the same steps: a full
// evaluation (Env.EvaluateWindow: encode, discover, re-validate the
// tracked dependencies discovery did not measure, observe, sample) and,
// with two cadences, the incremental check of a window's delta
// (Cursor.Delta, Checker.Apply, Env.CheckWindow) and the discovery of a
// snapshot merged into a later check (Env.DiscoverSnapshot). It reads of
// the stream's configuration only Config, and owns no goroutine: its
// callers say on which one each value lives.
//
// A check that merges a discovery's result (the window ending
// DiscoverEvery records back) joins its minimal set, strengths and newly
// minimal dependencies to the check's exact counts in one
// Tracker.Observe; the checks in between are Tracker.ObserveCheck. Between
// a discovery's end and its merge, each check has the engine build the
// state of the rules the merge will add, a share of them per check
// (prepareRules, incremental.Engine.Prepare), so that the merge check
// costs about an incremental check; what the engine built ahead, and
// when, changes no count it reports, so neither the merge's events nor
// their errors depend on when discovery finished.
package eval
