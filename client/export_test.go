package client

import "time"

// SetFeedWait sets how long one read of Feed waits, until the returned
// function restores it.
func SetFeedWait(d time.Duration) (restore func()) {
	old := feedWait
	feedWait = d
	return func() { feedWait = old }
}

// DecodeLease, DecodeNext and ReadBody are decodeLease, decodeNext and
// readBody.
var (
	DecodeLease = decodeLease
	DecodeNext  = decodeNext
	ReadBody    = readBody
)
