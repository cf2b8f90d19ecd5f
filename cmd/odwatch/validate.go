package main

import (
	"context"
	"fmt"
	"io"
)

// runValidate is a placeholder until the validate command lands.
func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return fmt.Errorf("validate: not implemented yet")
}
