// Package benchstream generates the 20-field stream of issue 9's check
// benchmarks — discovery's BenchmarkCheck and stream's BenchmarkEndToEnd
// measure the same records — and names the 50 rules they track. Only tests
// and benchmarks import it.
package benchstream

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// Fields are the stream's columns, in Row's order.
var Fields = []string{
	"ts", "seq", "zip", "city", "country", "category", "sub", "level",
	"amount", "rate", "tax", "age", "age_group", "price", "qty", "total",
	"score", "grade", "noise", "flag",
}

// Text says which of Fields hold text (quoted in JSON); the others are
// numbers or booleans.
var Text = map[string]bool{"ts": true, "city": true, "country": true, "category": true, "sub": true, "age_group": true}

// Rules are the 50 tracked dependencies: the planted ones (holding or
// nearly), and ones a past window discovered that no longer hold.
var Rules = []string{
	"{zip}: [] -> city",
	"{zip}: [] -> country",
	"{city}: [] -> country",
	"{sub}: [] -> category",
	"{category}: [] -> level",
	"{sub}: [] -> level",
	"{age}: [] -> age_group",
	"{sub}: [] -> rate",
	"{score}: [] -> grade",
	"{price,qty}: [] -> total",
	"{amount,rate}: [] -> tax",
	"{zip,category}: [] -> country",
	"{zip,flag}: [] -> city",
	"{category,flag}: [] -> level",
	"{age,flag}: [] -> age_group",
	"{}: [] -> flag",
	"{}: [] -> country",
	"{}: [] -> level",
	"{age}: [] -> grade",
	"{level}: [] -> category",
	"{category}: [] -> rate",
	"{total}: [] -> qty",
	"{zip}: [] -> sub",
	"{country,category}: [] -> city",
	"{score,flag}: [] -> grade",
	"{}: ts ~ seq (asc)",
	"{}: seq ~ ts (desc)",
	"{}: age ~ age_group (asc)",
	"{flag}: age ~ age_group (asc)",
	"{}: score ~ grade (desc)",
	"{flag}: score ~ grade (desc)",
	"{rate}: amount ~ tax (asc)",
	"{rate,flag}: amount ~ tax (asc)",
	"{qty}: price ~ total (asc)",
	"{price}: qty ~ total (asc)",
	"{}: level ~ category (asc)",
	"{}: zip ~ city (asc)",
	"{}: zip ~ country (asc)",
	"{}: city ~ country (asc)",
	"{}: amount ~ tax (asc)",
	"{}: price ~ total (asc)",
	"{}: age ~ score (asc)",
	"{}: ts ~ amount (asc)",
	"{level}: seq ~ grade (desc)",
	"{category}: age ~ grade (asc)",
	"{}: level ~ grade (desc)",
	"{country}: zip ~ city (asc)",
	"{sub}: amount ~ tax (desc)",
	"{category}: price ~ qty (asc)",
	"{category,flag}: score ~ grade (desc)",
}

// FaultRule is the rule a faulty record breaks (see Row).
const FaultRule = "{age}: [] -> age_group"

// Stream generates the records: numeric, categorical and temporal fields
// with planted dependencies, some exact, some with noise, some not holding
// at all. The same seed gives the same records.
type Stream struct {
	r   *rand.Rand
	seq int
	t0  time.Time
}

// New returns the stream of seed.
func New(seed uint64) *Stream {
	return &Stream{r: rand.New(rand.NewPCG(seed, 1)), t0: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Row fills vals (len(Fields)) with the next record. A faulty record has
// an age_group no age has (FaultRule breaks).
func (s *Stream) Row(vals []string, faulty bool) {
	r := s.r
	s.seq++
	i := 0
	put := func(v string) { vals[i] = v; i++ }
	// ts: increasing with jitter (temporal), seq: increasing (numeric).
	put(s.t0.Add(time.Duration(s.seq)*time.Second + time.Duration(r.IntN(900))*time.Millisecond).Format(time.RFC3339Nano))
	put(strconv.Itoa(s.seq))
	// zip -> city -> country (exact FDs), 1% of cities wrong for their zip.
	zip := r.IntN(2000)
	city := zip / 10
	if r.IntN(100) == 0 {
		city = r.IntN(200)
	}
	put(strconv.Itoa(10000 + zip))
	put("city" + strconv.Itoa(city))
	put("country" + strconv.Itoa(city/40))
	// category (8) -> sub (40): sub determines category exactly.
	sub := r.IntN(40)
	put("cat" + strconv.Itoa(sub%8))
	put("sub" + strconv.Itoa(sub))
	// level: ordinal 1..5 determined by the category with 3% noise.
	level := sub%8%5 + 1
	if r.IntN(100) < 3 {
		level = 1 + r.IntN(5)
	}
	put(strconv.Itoa(level))
	// amount ~ tax within rate (OC in context rate), 2% noise.
	amount := r.IntN(100000)
	rate := 5 * (1 + sub%4)
	tax := amount * rate / 100
	if r.IntN(50) == 0 {
		tax = r.IntN(25000)
	}
	put(strconv.FormatFloat(float64(amount)/100, 'f', 2, 64))
	put(strconv.Itoa(rate))
	put(strconv.FormatFloat(float64(tax)/100, 'f', 2, 64))
	// age ~ age_group (OC and FD), exact unless faulty.
	age := 18 + r.IntN(70)
	group := age / 10
	if faulty {
		group = 10 + r.IntN(10) // never the right one
	}
	put(strconv.Itoa(age))
	put("g" + strconv.Itoa(group))
	// price, qty, total = price*qty: total ~ price within qty.
	price := 1 + r.IntN(500)
	qty := 1 + r.IntN(10)
	put(strconv.Itoa(price))
	put(strconv.Itoa(qty))
	put(strconv.Itoa(price * qty))
	// score ~ grade (desc: grade 1 is the best), 1% noise.
	score := r.IntN(1000)
	grade := 10 - score/100
	if r.IntN(100) == 0 {
		grade = 1 + r.IntN(10)
	}
	put(strconv.Itoa(score))
	put(strconv.Itoa(grade))
	// noise: unrelated; flag: a rare boolean.
	put(strconv.FormatFloat(r.NormFloat64(), 'g', 6, 64))
	put(strconv.FormatBool(r.IntN(20) == 0))
}
