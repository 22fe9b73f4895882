// Package deps pins modules during early development; removed once every module is used.
package deps

import (
	_ "cel.dev/cel-go/cel"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/spf13/cobra"
	_ "go.opentelemetry.io/otel"
	_ "go.opentelemetry.io/otel/sdk/trace"
	_ "go.opentelemetry.io/otel/sdk/trace/tracetest"
	_ "go.yaml.in/yaml/v3"
	_ "mvdan.cc/sh/v3/syntax"
)
