package alerts_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/odwatch/odwatch/alerts"
	"github.com/odwatch/odwatch/discovery"
)

// A dependency found in a clean window, broken in the next one (K = 1).
func ExampleTracker() {
	salTax := discovery.Dependency{Kind: discovery.KindOC, Left: "salary", Right: "tax"}
	tr := alerts.NewTracker(alerts.Config{Stream: "payroll", Epsilon: 0.01, K: 1})
	window := func(seq int) alerts.WindowInfo {
		return alerts.WindowInfo{Stream: "payroll", Topic: "payroll",
			StartOffsets: map[int32]int64{0: int64(seq*500 - 500)}, EndOffsets: map[int32]int64{0: int64(seq*500 - 1)},
			EndTime: time.Date(2026, 11, 30, 1, seq, 0, 0, time.UTC), Records: 500, EndSeq: uint64(seq * 500)}
	}
	sink := alerts.NewWriterSink(os.Stdout)
	ctx := context.Background()

	_ = sink.Send(ctx, tr.Observe(window(1), []alerts.Observation{{Dependency: salTax, Minimal: true}}))
	_ = sink.Send(ctx, tr.Observe(window(2), []alerts.Observation{{Dependency: salTax, Removals: 20, Error: 0.04,
		Samples: []alerts.Sample{{Topic: "payroll", Partition: 0, Offset: 612, Values: map[string]string{"salary": "5000", "tax": "5000"}}}}}))
	fmt.Println(tr.States())
	// Output:
	// 2026-11-30T01:01:00Z DISCOVERED payroll {}: salary ~ tax (asc) error 0.0000 -> 0.0000 (eps 0.0100, margin 0.0000) removals 0 window payroll p0:0-499 (500 records) id 35ee9fd7d45edcdff3607d88f324c0aa
	//
	// 2026-11-30T01:02:00Z VIOLATED payroll {}: salary ~ tax (asc) error 0.0000 -> 0.0400 (eps 0.0100, margin 0.0000) removals 20 window payroll p0:500-999 (500 records) id 85e073ab421847b84bb5449c27e5270f
	//     payroll/0@612 salary=5000 tax=5000
	//
	// map[holding:0 pinned:0 violated:1]
}
