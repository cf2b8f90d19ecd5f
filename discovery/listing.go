package discovery

// listingTuning holds the thresholds of the reliable listing
// (docs/DESIGN.md, "Strength" and "Keys, equivalences and implied
// rules"): what counts as evidence for a rule and which entries step back.
// They change no error, removal or eps verdict, only Strength, Reliable
// and ImpliedBy. Production takes defaultListing; tests force other values
// through Options.tune (TestListingTuning).
type listingTuning struct {
	// minSupport is the share of the distinct records that must lie in
	// context classes holding at least two distinct records for a
	// dependency to have any strength: below it the context is a near
	// key, whose rare repeats carry the rule alone (an airport's name, 7%
	// of its records in repeated classes; a voter's street address, 8%).
	// The share falls when a window samples a table's entities: zipcodes'
	// {city,state} has 34% in the file and 20-23% in the stream
	// benchmark's 5,000-record windows of its 42,049 records. The bound
	// sits between those (their geometric middle, 12.6%); the numeric
	// near keys with more (latitude 23%, a car's weight 22%) are
	// measurements, which measurementShare takes out.
	minSupport float64
	// maxKeyColumns bounds the keys Summarize looks for: a key of four or
	// more columns is almost always the accident of measurement columns
	// combined, and the search grows with the number of column sets.
	maxKeyColumns int
	// measurementShare: a numeric or temporal column with at least this
	// many distinct values per distinct record is a measurement (a weight,
	// a coordinate, a time stamp), and a rule whose context holds one is
	// not listed as reliable: records that share a measurement share it
	// by the scale's resolution or as one entity measured once, a group
	// no person names (adult's fnlwgt, 67% distinct; a car's weight,
	// 78%), while the ordered contexts of the genuine rules have at most
	// 24% (ncvoter's zip_code; a car's Displacement, 20%).
	measurementShare float64
	// unbounded validates every candidate of the listing alone, without
	// the bounds that skip those that cannot be reliable (dropHopeless,
	// belowBound): a fast path off, for the tests that compare.
	unbounded bool
	// noG3Bound turns off the O(1) bound from the g3 removals that drops
	// such candidates before any is made a task (dropBeyondG3), leaving
	// them to dropHopeless: for the test that checks the same are dropped.
	noG3Bound bool
	// noEvidenceScreen validates a candidate of the listing alone on all
	// records with the eps budget when they hold repeated records, rather
	// than screening it on the distinct ones first (screenOnEvidence):
	// for the test that compares.
	noEvidenceScreen bool
	// noKeyBound counts the distinct values of every key candidate,
	// rather than only those whose bound from their subsets can reach a
	// key (validate.FindKeys): for the test that compares.
	noKeyBound bool
}

// defaultListing is the tuning of every caller outside the tests.
var defaultListing = listingTuning{minSupport: 0.12, maxKeyColumns: 3, measurementShare: 0.5}

// listing returns the tuning opts carries, the default unless a test
// forced another.
func (opts Options) listing() listingTuning {
	if opts.tune != nil {
		return *opts.tune
	}
	return defaultListing
}
