package alerts

import (
	"context"
	_ "embed" // the event schema
	"fmt"
	"net/http"

	"github.com/twmb/franz-go/pkg/sr"
)

//go:embed event.schema.json
var eventSchema string

// eventDataSchema is the CloudEvents dataschema attribute of every event
// (ce_dataschema / ce-dataschema header): the $id of the event's JSON
// Schema, EventSchema, whose last part is its version. A new version comes
// with every change of the event's JSON; version 2 added related and
// strength, version 3 the key and equivalence dependencies, version 4 a
// violated event's explanation and its samples' expected values, the
// changed type and event, replaced_by, equivalents and implied_by,
// version 5 an equivalence's second expected value (Expected.Or).
const eventDataSchema = "urn:odwatch:schema:event:v5"

// EventSchema returns the JSON Schema (draft 2020-12) of an event's JSON
// (Event.MarshalJSON), published in the repository as
// alerts/event.schema.json.
func EventSchema() string { return eventSchema }

// registerEventSchema registers EventSchema under subject (the events
// topic's value subject: "<topic>-value") in the Schema Registry at url, as
// a JSON Schema, and returns its id. Registering the same schema again
// returns the same id. client may be nil (http.DefaultClient).
func registerEventSchema(ctx context.Context, url, subject string, client *http.Client) (int, error) {
	opts := []sr.ClientOpt{sr.URLs(url)}
	if client != nil {
		opts = append(opts, sr.HTTPClient(client))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return 0, fmt.Errorf("alerts: schema registry %s: %w", url, err)
	}
	id, err := cl.RegisterSchema(ctx, subject, sr.Schema{Schema: eventSchema, Type: sr.TypeJSON}, -1, -1)
	if err != nil {
		return 0, fmt.Errorf("alerts: register the event schema as %s in %s: %w", subject, url, err)
	}
	return id, nil
}
