package redisstore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orderlyhq/orderly/persistence"
)

// A batch of a stateful queue ends with the versions handed out and, when
// timers brought some jobs, their flags; a batch without them (written
// before stateful queues) still decodes.
func TestDecodeBatchStateTrailer(t *testing.T) {
	h, jobs := sampleBatch()
	plain := encodeBatch(h, jobs)
	_, got, err := decodeBatch(plain)
	require.NoError(t, err)
	for _, j := range got {
		require.Nil(t, j.State)
	}
	trailer := "\x01s"
	flags := "\x01t"
	for i := range jobs {
		trailer += "\x013"
		if i == 0 {
			flags += "\x011"
		} else {
			flags += "\x00"
		}
	}
	_, got, err = decodeBatch(plain + trailer)
	require.NoError(t, err)
	require.Equal(t, &persistence.State{Version: 3}, got[0].State)
	_, got, err = decodeBatch(plain + trailer + flags)
	require.NoError(t, err)
	require.True(t, got[0].Timer)
	if len(got) > 1 {
		require.False(t, got[1].Timer)
	}
	for _, bad := range []string{plain + "\x01x", plain + "\x01s", plain + trailer + "\x01t", plain + trailer + flags + "\x00"} {
		_, _, err = decodeBatch(bad)
		require.ErrorIs(t, err, errCorrupt, "%q", bad[len(plain):])
	}
}

// State entries: both encodings, and the tombstone a delete leaves.
func TestDecodeStateEntries(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want persistence.State
	}{
		{nil, persistence.State{}},
		{"\x013{\"n\":1}", persistence.State{Data: []byte(`{"n":1}`), Version: 3}},
		{"\x017", persistence.State{Data: []byte{}, Version: 7}},
		{"\x00\x018", persistence.State{Version: 8, Deleted: true}},
	} {
		got, err := decodeState(tc.in)
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
	for _, bad := range []string{"", "\x00", "\x00\x010", "\x00\x018x", "\x010"} {
		_, err := decodeState(bad)
		require.ErrorIs(t, err, errCorrupt, "%q", bad)
	}
}

// FuzzDecodeState feeds arbitrary bytes to the decoder of state entries.
func FuzzDecodeState(f *testing.F) {
	f.Add("\x013{\"n\":1}")
	f.Add("\x010")
	f.Add("")
	f.Add("\x00\x014")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := decodeState(s)
		if err != nil {
			return
		}
		require.Positive(t, st.Version)
		require.Equal(t, st.Deleted, st.Data == nil)
	})
}
