// go-redsync's own test fixture, pointed at whatever `redis-server` is
// first on PATH: tests/redis_server_fixtures.rs puts rlockd there under
// that name (a symlink), or the real redis-server to compare. The fixture
// is go-redsync's tempredis (its go.mod's replacement of stvp/tempredis):
// it runs `redis-server -`, writes its config to standard input, waits for
// "Ready to accept connections" and talks over the unix socket it names.
// RLOCKD_FIXTURE_EXPECTS says which server must have answered.
package clients

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/stvp/tempredis"
)

func TestTempredisFixture(t *testing.T) {
	expects := os.Getenv("RLOCKD_FIXTURE_EXPECTS")
	if expects == "" {
		t.Fatal("no RLOCKD_FIXTURE_EXPECTS: run this through tests/redis_server_fixtures.rs")
	}
	ctx := context.Background()
	var pools []rsredis.Pool
	for i := 0; i < 3; i++ {
		// As go-redsync's TestMain starts its servers, without the
		// snapshot a real redis-server would leave in this directory.
		server, err := tempredis.Start(tempredis.Config{"port": "0", "save": ""})
		if err != nil {
			t.Fatalf("tempredis.Start: %v", err)
		}
		t.Cleanup(func() {
			if err := server.Term(); err != nil {
				t.Errorf("Term: %v", err)
			}
		})
		c := redis.NewClient(&redis.Options{Network: "unix", Addr: server.Socket()})
		t.Cleanup(func() { c.Close() })
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			t.Fatalf("INFO: %v", err)
		}
		if got := strings.Contains(info, "rlockd_version:"); got != (expects == "rlockd") {
			t.Fatalf("expected %s, INFO says:\n%s", expects, info)
		}
		pools = append(pools, goredis.NewPool(c))
	}
	rs := redsync.New(pools...)
	mutex := rs.NewMutex("fixture-lock", redsync.WithExpiry(5*time.Second), redsync.WithTries(1))
	if err := mutex.LockContext(ctx); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if err := rs.NewMutex("fixture-lock", redsync.WithTries(1)).LockContext(ctx); err == nil {
		t.Fatal("a second mutex took a held lock")
	}
	if ok, err := mutex.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("Unlock: %v %v", ok, err)
	}
}
