package discovery

import "github.com/odwatch/odwatch/discovery/internal/validate"

// Polarity says whether an OC relates A ascending to B ascending (Asc) or to
// B descending (Desc). It is the validators' type, so that a dependency's
// polarity reaches them as it is.
type Polarity = validate.Polarity

const (
	Asc  = validate.Asc
	Desc = validate.Desc
)

// NoStrength is the Strength of a dependency measured on a table without
// rows, where no chance correction can be computed. It is below every
// MinStrength, so such a dependency is never Reliable; JSON writes it as
// "strength": null. Strength is never NaN.
const NoStrength = validate.NoStrength
