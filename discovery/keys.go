package discovery

import (
	"context"

	"github.com/odwatch/odwatch/discovery/internal/validate"
	"github.com/odwatch/odwatch/discovery/table"
)

// foundKey is one minimal key with its measures (validate.FoundKey).
type foundKey = validate.FoundKey

// findKeys returns the minimal keys of t of at most maxColumns columns
// (validate.FindKeys), judged on t's distinct records with the given
// tuning, passing pause as Options.Pause says.
func findKeys(ctx context.Context, t *table.Table, eps float64, maxColumns int, tune listingTuning, pause func(context.Context) error) ([]foundKey, error) {
	return validate.FindKeys(ctx, t, eps, maxColumns, newEvidence(t, tune), pause)
}
