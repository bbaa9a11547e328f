// Package sdk holds no Go code: its test (sdk_test.go) runs the tests of the
// Python SDK (sdk/python) and the TypeScript SDK (sdk/typescript) against a
// real node process on a throwaway Redis, with signed webhook deliveries to
// receivers written with each SDK.
package sdk
