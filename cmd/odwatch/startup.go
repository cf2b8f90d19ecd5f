package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/odwatch/odwatch/internal/backoff"
	"github.com/odwatch/odwatch/stream"
	"github.com/odwatch/odwatch/stream/kafkaread"
)

// Start-up checks of `odwatch run`, before the monitor joins its consumer
// group, for what would otherwise be silent: brokers that never answer
// (the monitor retries them for ever, which is right for an outage after
// start-up but hides a wrong --brokers), a topic that does not exist (the
// group would be formed without it and consume nothing until the next
// rebalance) and a state directory that does not exist (Pebble creates
// it).

// startupRetry is the backoff between the start-up metadata requests:
// from startupRetryBase doubling to startupRetryCap.
const (
	startupRetryBase = 200 * time.Millisecond
	startupRetryCap  = 5 * time.Second
)

// errConnect is the failure of brokers that did not answer in time; run
// exits 1 with its one line.
type errConnect struct {
	brokers []string
	timeout time.Duration
	err     error
}

func (e *errConnect) Error() string {
	return fmt.Sprintf("kafka at %s did not answer within --connect-timeout %v: %v (check --brokers, or raise --connect-timeout)",
		strings.Join(e.brokers, ","), e.timeout, e.err)
}

func (e *errConnect) Unwrap() error { return e.err }

// waitForKafka asks the brokers of cfg for the metadata of its topics
// until they answer, for at most timeout, and then until every topic
// exists, logging each missing one once by name (and once more when it
// appears). It returns an errConnect when the brokers never answered, the
// context's error when it ended first.
func waitForKafka(ctx context.Context, log *slog.Logger, cfg stream.Config, timeout time.Duration) error {
	log.Info("waiting for kafka", "brokers", strings.Join(cfg.Brokers, ","), "connect_timeout", timeout)
	client := &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Transport: kafkaread.Transport(cfg.Dialer), Timeout: 10 * time.Second}
	topics := streamTopics(cfg)
	deadline := time.Now().Add(timeout)
	b := backoff.New(startupRetryBase, startupRetryCap)
	answered := false
	var lastErr error // the last error that is not the deadline's
	missing := map[string]bool{}
	for {
		rctx, cancel := context.WithDeadline(ctx, deadline)
		if answered {
			rctx, cancel = context.WithTimeout(ctx, client.Timeout)
		}
		res, err := client.Metadata(rctx, &kafka.MetadataRequest{Topics: topics})
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case refused(err):
			return fmt.Errorf("kafka at %s refused odwatch: %w", strings.Join(cfg.Brokers, ","), err)
		case err != nil && !answered && !time.Now().Before(deadline):
			if lastErr == nil || !errors.Is(err, context.DeadlineExceeded) {
				lastErr = err
			}
			return &errConnect{brokers: cfg.Brokers, timeout: timeout, err: lastErr}
		case err != nil:
			lastErr = err
		case err == nil:
			if !answered {
				log.Info("kafka answered", "brokers", strings.Join(cfg.Brokers, ","))
			}
			answered = true
			if reportTopics(log, res, topics, missing) {
				return nil
			}
		}
		wait := b.Next()
		if !answered {
			wait = min(wait, time.Until(deadline))
		}
		if !backoff.Sleep(ctx, max(wait, time.Millisecond)) {
			return ctx.Err()
		}
	}
}

// refused: the brokers answered, refusing the credentials or the access,
// which no retry mends (the monitor's list, stream/internal/fetch's
// PermanentError, is the same).
func refused(err error) bool {
	for _, e := range []kafka.Error{kafka.SASLAuthenticationFailed, kafka.UnsupportedSASLMechanism,
		kafka.IllegalSASLState, kafka.TopicAuthorizationFailed, kafka.ClusterAuthorizationFailed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// reportTopics logs the topics of res that do not exist, each once while
// missing holds it, and those that appeared since; it reports whether
// every topic exists.
func reportTopics(log *slog.Logger, res *kafka.MetadataResponse, topics []string, missing map[string]bool) bool {
	exists := map[string]bool{}
	for _, t := range res.Topics {
		if t.Error == nil && len(t.Partitions) > 0 {
			exists[t.Name] = true
		}
	}
	all := true
	for _, name := range topics {
		switch {
		case !exists[name] && !missing[name]:
			missing[name] = true
			log.Warn("topic does not exist; waiting for it to be created (check --topic, or create it)", "topic", name)
		case exists[name] && missing[name]:
			delete(missing, name)
			log.Info("topic exists now", "topic", name)
		}
		all = all && exists[name]
	}
	return all
}

// streamTopics are the topics cfg's streams watch, sorted, once each.
func streamTopics(cfg stream.Config) []string {
	var topics []string
	for _, st := range cfg.Streams {
		topics = append(topics, st.Topic)
	}
	slices.Sort(topics)
	return slices.Compact(topics)
}

// ensureStateDir creates the state directory when it does not exist, and
// says so: a mistyped --state-dir must not become a silent new store.
func ensureStateDir(log *slog.Logger, dir string) error {
	_, err := os.Stat(dir)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("state-dir %s: %w", dir, err)
	}
	log.Info("state-dir did not exist: created it (a new, empty store)", "state_dir", dir)
	return nil
}
