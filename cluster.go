package orderly

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/orderlyhq/orderly/internal/remoteguard"
)

// ActorCredentials is a token presented to a node's actor remote
// (Config.ActorToken) on every call. A client converts its token and passes
// it to its own protoactor remote as gRPC per-call credentials:
//
//	remote.Configure(host, port, remote.WithDialOptions(
//		grpc.WithTransportCredentials(insecure.NewCredentials()),
//		grpc.WithPerRPCCredentials(orderly.ActorCredentials(token))))
//
// The token is sent as is: beyond a trusted network, run the actor remote
// over TLS (Config.ActorTLS) or through a tunnel or a private network.
type ActorCredentials string

// GetRequestMetadata returns the metadata that carries the token; it
// implements gRPC's credentials.PerRPCCredentials.
func (t ActorCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{remoteguard.Header: string(t)}, nil
}

// RequireTransportSecurity reports false: the token may travel over a
// plain connection (see the type's documentation); it implements gRPC's
// credentials.PerRPCCredentials.
func (ActorCredentials) RequireTransportSecurity() bool { return false }

// LoadActorTLS reads a PEM certificate, its key and a PEM bundle of CA
// certificates into a mutual TLS configuration for the actor remote
// (Config.ActorTLS): the node presents the certificate, accepts only
// clients whose certificate the CAs signed, and checks the certificates of
// the processes it dials against the same CAs. A client uses the same
// configuration, with its own certificate, on both directions of its own
// remote (the answer to a request dials the sender back):
//
//	creds := credentials.NewTLS(cfg)
//	remote.Configure(host, port,
//		remote.WithServerOptions(grpc.Creds(creds)),
//		remote.WithDialOptions(grpc.WithTransportCredentials(creds)))
//
// Certificates must name the host (DNS or IP SAN) others dial.
func LoadActorTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("orderly: actor TLS certificate %s, key %s: %w", certFile, keyFile, err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("orderly: actor TLS CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("orderly: actor TLS CA %s: no PEM certificate in it", caFile)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}, nil
}
