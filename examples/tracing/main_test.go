package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTracing runs the example on its in-memory Redis: it prints the
// publish and the process span, in one trace, the process span the child
// of the publish span.
func TestTracing(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run([]string{"--spans=false"}, &out))
	// "<name> <kind> trace <id> span <id> parent <id>" per span.
	spans := map[string][]string{}
	for line := range strings.Lines(out.String()) {
		f := strings.Fields(line)
		require.Len(t, f, 9, "line %q", line)
		spans[f[1]] = f
	}
	publish, process := spans["publish"], spans["process"]
	require.NotNil(t, publish, out.String())
	require.NotNil(t, process, out.String())
	require.Equal(t, publish[4], process[4], "one trace id")
	require.Equal(t, publish[6], process[8], "the process span's parent is the publish span")
}
