// Package apiv1 holds the JSON wire types of Orderly's HTTP API, version 1
// (package web documents the endpoints): what a client sends and what the
// server answers. The server (web), the orderly command and the tests share
// them, so that the API's shapes are declared once.
//
// A type's JSON field order is the order of its answers' keys. Times are
// unix seconds (JSON numbers, possibly fractional); payloads are
// wire.Payload, as the webhook sends them: the stored bytes as a JSON value
// when they are compact JSON in valid UTF-8 (wire.IsCompactJSON), else
// base64.
//
// NewJob is the one request type with rules of its own: DecodeJob checks a
// job object as the server does (unknown or repeated fields, types, the
// payload's size), DecodeJobs a whole enqueue body in one pass, and
// NewJob.Store turns a job into a persistence.NewJob with
// persistence.PerformAt, the due-time rule every transport shares.
package apiv1
