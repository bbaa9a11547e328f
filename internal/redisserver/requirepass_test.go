package redisserver

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestStartWithRequirepass(t *testing.T) {
	s, err := Start(Options{Args: []string{"--requirepass", "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: "s3cret"})
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("ping with the password: %v", err)
	}
	anon := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer anon.Close()
	if err := anon.Ping(context.Background()).Err(); err == nil {
		t.Fatal("ping without the password succeeded; requirepass was not applied")
	}
}
