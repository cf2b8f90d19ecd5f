package discovery

import (
	"context"

	"github.com/odwatch/odwatch/discovery/internal/validate"
	"github.com/odwatch/odwatch/discovery/table"
)

// foundKey is one minimal key with its measures (validate.FoundKey).
type foundKey = validate.FoundKey

// findKeys returns the minimal keys of t of at most maxColumns columns
// and at least minStrength (> 0) (validate.FindKeys), judged on t's
// distinct records with the given tuning (its noKeyBound), passing pause
// as Options.Pause says.
func findKeys(ctx context.Context, t *table.Table, eps float64, maxColumns int, minStrength float64, tune listingTuning, pause func(context.Context) error) ([]foundKey, error) {
	return validate.FindKeys(ctx, t, newEvidence(t, tune), validate.KeyOptions{
		Eps: eps, MaxColumns: maxColumns, MinStrength: minStrength, NoBound: tune.noKeyBound, Pause: pause})
}
