package sdk

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/internal/testing/openapitest"
)

// tsFields returns the fields of an interface of src/types.ts and whether
// each is required (not marked "?").
func tsFields(t *testing.T, src, name string) map[string]bool {
	t.Helper()
	m := regexp.MustCompile(`(?ms)^export interface ` + name + ` \{\n(.*?)^\}`).FindStringSubmatch(src)
	require.NotNil(t, m, "interface %s in src/types.ts", name)
	out := map[string]bool{}
	for _, f := range regexp.MustCompile(`(?m)^  (\w+)(\??):`).FindAllStringSubmatch(m[1], -1) {
		out[f[1]] = f[2] == ""
	}
	return out
}

// schemaFields is the same of a schema of the document.
func schemaFields(s *openapi3.Schema) map[string]bool {
	out := map[string]bool{}
	for name := range s.Properties {
		out[name] = slices.Contains(s.Required, name)
	}
	return out
}

// The TypeScript SDK's wire types have the fields of the OpenAPI document's
// schemas, required where the document requires them.
func TestTypeScriptTypesMatchOpenAPI(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("typescript/src/types.ts")
	require.NoError(t, err)
	src := string(b)
	doc, err := openapitest.Doc()
	require.NoError(t, err)
	schemas := doc.Components.Schemas
	for ts, schema := range map[string]string{
		"NewJob": "NewJob", "Payload": "Payload", "State": "State", "FeedEntry": "FeedEntry",
		"Cancelled": "Cancelled", "WebhookJob": "WebhookJob", "WebhookRequest": "WebhookRequest",
		"WebhookAnswer": "WebhookAnswer", "JobLookup": "JobLookup",
	} {
		require.Contains(t, schemas, schema)
		require.Equal(t, schemaFields(schemas[schema].Value), tsFields(t, src, ts), "%s against #/components/schemas/%s", ts, schema)
	}
	emit := schemas["WebhookAnswer"].Value.Properties["emit"].Value.Items.Value
	require.Equal(t, schemaFields(emit), tsFields(t, src, "Emit"), "Emit against WebhookAnswer.emit")

	// The pull protocol's bodies.
	body := func(path, status string) *openapi3.Schema {
		op := doc.Paths.Find(path).Post
		return op.Responses.Value(status).Value.Content.Get("application/json").Schema.Value
	}
	require.Equal(t, schemaFields(body("/api/v1/queues/{q}/pull", "200")), tsFields(t, src, "PullWindow"))
	require.Equal(t, schemaFields(body("/api/v1/queues/{q}/pull/{lease}/answer", "409")), tsFields(t, src, "LeaseLostBody"))
	// The answer's 200: accepted, lost and, where the document has it, the
	// next window ("next", in the shape of a pull's 200).
	answered, ts := body("/api/v1/queues/{q}/pull/{lease}/answer", "200"), tsFields(t, src, "PullAnswered")
	require.Contains(t, ts, "next")
	if next := answered.Properties["next"]; next != nil {
		require.Equal(t, schemaFields(body("/api/v1/queues/{q}/pull", "200")), schemaFields(next.Value), "the answer's next against the pull's 200")
		require.Regexp(t, `(?m)^  next\?: PullWindow;`, src)
	} else {
		t.Log("the document's pull answer has no next yet: PullAnswered.next is not compared")
		delete(ts, "next")
	}
	require.Equal(t, schemaFields(answered), ts, "PullAnswered against the answer's 200")
	require.Equal(t, schemaFields(body("/api/v1/queues/{q}/jobs", "202")), tsFields(t, src, "EnqueueResult"))
	feed := doc.Paths.Find("/api/v1/queues/{q}/feed").Get.Responses.Value("200").Value.Content.Get("application/json").Schema.Value
	require.Equal(t, schemaFields(feed), tsFields(t, src, "FeedPage"))
	require.NotRegexp(t, `:\s*any\b`, src, "no any in the wire types")
}
