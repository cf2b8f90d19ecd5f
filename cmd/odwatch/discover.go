package main

import (
	"context"
	"fmt"
	"io"
)

// runDiscover is a placeholder until the discover command lands.
func runDiscover(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return fmt.Errorf("discover: not implemented yet")
}
