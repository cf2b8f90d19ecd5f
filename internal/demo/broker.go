package demo

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/odwatch/odwatch/stream/kafkaread"
	"github.com/twmb/franz-go/pkg/kfake"
)

// StartBroker starts an in-process Kafka broker (kfake) on a free
// 127.0.0.1 port with the given topics (name → partitions) created, for the
// demo and tests. stop closes it; cancelling ctx closes it too.
func StartBroker(ctx context.Context, topics map[string]int) (addr string, stop func(), err error) {
	return startCluster(ctx, BrokerOptions(topics))
}

// StartDevBroker starts the broker of `odwatch dev-broker`: listening on
// addr (HOST:PORT; port 0 picks a free one), with the given topics and,
// unlike the tests' broker, no topic created on first use, so that a
// client naming a topic that does not exist learns it as with a Kafka
// whose auto.create.topics.enable is false.
func StartDevBroker(ctx context.Context, addr string, topics map[string]int) (string, func(), error) {
	return startCluster(ctx, brokerOptions(topics, addr, false))
}

func startCluster(ctx context.Context, opts []kfake.Opt) (addr string, stop func(), err error) {
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return "", nil, fmt.Errorf("start in-process broker: %w", err)
	}
	addrs := c.ListenAddrs()
	if len(addrs) == 0 {
		c.Close()
		return "", nil, fmt.Errorf("start in-process broker: no listen address")
	}
	done := make(chan struct{})
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(done)
			c.Close() // idempotent
		})
	}
	go func() {
		select {
		case <-ctx.Done():
			c.Close()
		case <-done:
		}
	}()
	return addrs[0], stop, nil
}

// BrokerOptions are the in-process broker's options with topics (name →
// partitions) created, for a test that runs a kfake cluster of its own
// (to inject faults, or to close it under the monitor).
func BrokerOptions(topics map[string]int) []kfake.Opt {
	return brokerOptions(topics, "127.0.0.1:0", true)
}

func brokerOptions(topics map[string]int, addr string, autoCreate bool) []kfake.Opt {
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			return net.Listen(network, addr)
		}),
		// Tests restart crashed members with short session timeouts.
		kfake.GroupMinSessionTimeout(time.Second),
		kfake.BrokerConfigs(map[string]string{
			"message.max.bytes": fmt.Sprint(kafkaread.MaxMessageBytes),
		}),
	}
	if autoCreate {
		opts = append(opts, kfake.AllowAutoTopicCreation())
	}
	for name, n := range topics {
		if n <= 0 {
			n = 1
		}
		opts = append(opts, kfake.SeedTopics(int32(n), name))
	}
	return opts
}
