package orderly

// Version is Orderly's release version. It is the one version of a build:
// the orderly binary prints it (orderly version), a node advertises it to
// the cluster (Member.Version, orderly members, the dashboard), and the
// metric orderly_build_info carries it in its version label.
//
// It is a variable only so that a build can stamp another version into all
// of those places at once (make build VERSION=0.2.0-rc.1 does):
//
//	go build -ldflags "-X github.com/orderlyhq/orderly.Version=0.2.0-rc.1" ./cmd/orderly
//
// Programs read it and never assign it. The commit a binary was built from
// is build metadata that orderly version shows beside it.
var Version = "0.1.0"
