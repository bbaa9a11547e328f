package storetest

import (
	"slices"
	"testing"
)

// testCase is one case of the suite.
type testCase struct {
	name string
	fn   func(*testing.T, Harness)
	// needs is the optional roles the case calls: it is skipped for a
	// store without them.
	needs role
}

// Run runs the whole conformance suite against the harness. Tests run in
// parallel, each on its own namespace. The cases of an optional role
// (persistence.Admin, StateStore, FeedStore) the harness's store lacks
// are skipped.
func Run(t *testing.T, h Harness) {
	has := rolesOf(h.New(t, nil))
	cases := slices.Concat(
		enqueueTests, fetchTests, settleTests, restoreTests, leaseTests,
		morgueTests, actionTests, listingTests, inputTests, queueTests,
		controlTests, headerTests, stateTests, timerTests, outboxTests,
		feedTests, pollTests, upgradeTests, modelTests, outcomeTests, dedupTests, cancelTests, finishedTests, expiryTests, priorityTests, reshardTests,
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if missing := tc.needs &^ has; missing != 0 {
				t.Skipf("the store has no %s", missing)
			}
			t.Parallel()
			h := h
			h.needs = tc.needs
			tc.fn(t, h)
		})
	}
}
