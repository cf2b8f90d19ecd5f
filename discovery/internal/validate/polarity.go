package validate

// Polarity says whether an OC relates A ascending to B ascending (Asc) or to
// B descending (Desc).
type Polarity int

const (
	Asc Polarity = iota
	Desc
)

func (p Polarity) String() string {
	if p == Desc {
		return "desc"
	}
	return "asc"
}

// NoStrength is the strength of a dependency measured on a table without
// rows, where no chance correction can be computed. It is below every
// MinStrength, so such a dependency is never Reliable; JSON writes it as
// "strength": null. Strength is never NaN.
const NoStrength = -1.0
