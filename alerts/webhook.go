package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/odwatch/odwatch/internal/backoff"
)

// WebhookOptions configure NewWebhookSink.
type WebhookOptions struct {
	// Client sends the requests; nil means a client with a 10 s timeout.
	Client *http.Client
	// Retries is the number of retries after the first attempt of an event;
	// 0 means 5, negative means none.
	Retries int
	// Backoff is the wait before the first retry, doubled for every further
	// one up to MaxBackoff; 0 means 500 ms.
	Backoff time.Duration
	// MaxBackoff caps the wait between retries; 0 means 30 s. A Retry-After
	// header in seconds (429/503) is honoured up to this cap.
	MaxBackoff time.Duration
	// Source is the ce-source header; empty means "odwatch/<stream>".
	Source string
	Logger *slog.Logger
}

type webhookSink struct {
	url  string
	opts WebhookOptions
}

// NewWebhookSink returns a sink that POSTs each event, one request per
// event, as a CloudEvents 1.0 HTTP binary-mode message: the body is the
// event's JSON (Content-Type application/json) and the attributes travel as
// headers ce-specversion, ce-id, ce-source, ce-type, ce-time, ce-subject,
// ce-dataschema (eventDataSchema).
// One request per event keeps every request a valid CloudEvent and lets the
// receiver deduplicate by ce-id. A 2xx response is success; network errors,
// 5xx, 408 and 429 are retried with capped exponential backoff; any other
// status fails the event at once. Send stops at the first event that
// finally fails (later ones are not sent, so that order is kept) with a
// *SendError counting the ones delivered before it, and honours ctx, also
// while waiting. A 4xx refusing that one event (400, 409, 413, 415, 422, …)
// is ErrPermanent; 401, 403, 404, 405, 407 and 410 say the endpoint or
// its credentials are wrong, which refuses every event alike, so they are
// not (the events wait for the configuration to be fixed).
func NewWebhookSink(url string, opts WebhookOptions) Sink {
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.Retries == 0 {
		opts.Retries = 5
	} else if opts.Retries < 0 {
		opts.Retries = 0
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 500 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &webhookSink{url: url, opts: opts}
}

// errRefused marks a failure that retrying will not fix but that is not the
// event's fault (a bad URL, wrong credentials): no retries, not
// ErrPermanent.
var errRefused = errors.New("refused")

// refusesEveryEvent reports whether a 4xx status says the endpoint or its
// credentials are wrong rather than the event.
func refusesEveryEvent(status int) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
		http.StatusMethodNotAllowed, http.StatusProxyAuthRequired, http.StatusGone:
		return true
	}
	return false
}

func (s *webhookSink) Send(ctx context.Context, events []Event) error {
	for i, e := range events {
		body, err := json.Marshal(e)
		if err != nil {
			return &SendError{Sent: i, Err: fmt.Errorf("alerts: encode event %s: %w", e.ID, err)}
		}
		if err := s.sendOne(ctx, e, body); err != nil {
			return &SendError{Sent: i, Err: fmt.Errorf("alerts: webhook %s: event %s: %w", s.url, e.ID, err)}
		}
	}
	return nil
}

func (s *webhookSink) sendOne(ctx context.Context, e Event, body []byte) error {
	b := backoff.New(s.opts.Backoff, s.opts.MaxBackoff)
	for attempt := 0; ; attempt++ {
		retryAfter, err := s.post(ctx, e, body)
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrPermanent) || errors.Is(err, errRefused) || ctx.Err() != nil || attempt >= s.opts.Retries {
			return err
		}
		wait := min(max(b.Next(), retryAfter), s.opts.MaxBackoff)
		s.opts.Logger.WarnContext(ctx, "webhook delivery failed, retrying",
			slog.String("url", s.url), slog.String("event", e.ID),
			slog.Int("attempt", attempt+1), slog.Duration("wait", wait), slog.Any("error", err))
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-timer.C:
		}
	}
}

// post makes one attempt; it returns the server's Retry-After, if any.
func (s *webhookSink) post(ctx context.Context, e Event, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("%w: %w", errRefused, err)
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("ce-specversion", "1.0")
	h.Set("ce-id", e.ID)
	h.Set("ce-source", ceSource(s.opts.Source, e))
	h.Set("ce-type", ceType(e.Type))
	h.Set("ce-time", e.Time.UTC().Format(time.RFC3339Nano))
	h.Set("ce-subject", e.DependencyID)
	h.Set("ce-dataschema", eventDataSchema)
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return 0, err
	}
	// Drain a little so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return 0, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout ||
		resp.StatusCode >= 500:
		var ra time.Duration
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			ra = time.Duration(secs) * time.Second
		}
		return ra, fmt.Errorf("status %s", resp.Status)
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && !refusesEveryEvent(resp.StatusCode):
		return 0, fmt.Errorf("%w: status %s", ErrPermanent, resp.Status)
	default:
		// 1xx/3xx the client did not follow, and the 4xx refusing every
		// event.
		return 0, fmt.Errorf("%w: status %s", errRefused, resp.Status)
	}
}

func (s *webhookSink) Close() error {
	s.opts.Client.CloseIdleConnections()
	return nil
}
