package main

import (
	"context"
	"fmt"
	"io"
)

// runGenerate is a placeholder until the generate command lands.
func runGenerate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return fmt.Errorf("generate: not implemented yet")
}
