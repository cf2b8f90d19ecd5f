package main

import (
	"context"
	"fmt"
	"io"
)

// runDemo is a placeholder until the demo command lands.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return fmt.Errorf("demo: not implemented yet")
}
