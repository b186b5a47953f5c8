package clients

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

// TestSentinelLockLoop is go-redis's NewFailoverClient taking and
// releasing a redislock lock on whichever primary the sentinels name
// (ports in RLOCKD_SENTINELS, the master's name in RLOCKD_MASTER), round
// after round; each round that held it prints `locked PORT`, PORT being
// the server's own (CONFIG GET port, before and after). tests/sentinel.rs
// runs it across a failover and reads those lines. It ends when its
// standard input closes, or after two minutes.
func TestSentinelLockLoop(t *testing.T) {
	sentinels := os.Getenv("RLOCKD_SENTINELS")
	if sentinels == "" {
		t.Skip("no RLOCKD_SENTINELS: run through tests/sentinel.rs")
	}
	var addrs []string
	for _, port := range strings.Split(sentinels, ",") {
		addrs = append(addrs, "127.0.0.1:"+port)
	}
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    os.Getenv("RLOCKD_MASTER"),
		SentinelAddrs: addrs,
		DialTimeout:   300 * time.Millisecond,
		ReadTimeout:   500 * time.Millisecond,
		MaxRetries:    -1,
	})
	defer c.Close()
	done := make(chan struct{})
	go func() {
		bufio.NewReader(os.Stdin).ReadString('\n')
		close(done)
	}()
	locker := redislock.New(c)
	ctx := context.Background()
	port := func() string {
		got, err := c.ConfigGet(ctx, "port").Result()
		if err != nil {
			return ""
		}
		return got["port"]
	}
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case <-done:
			return
		case <-deadline:
			return
		case <-time.After(50 * time.Millisecond):
		}
		before := port()
		lock, err := locker.Obtain(ctx, "go:sentinel", 5*time.Second, nil)
		if err != nil {
			continue
		}
		if lock.Release(ctx) == nil && before != "" && port() == before {
			fmt.Printf("locked %s\n", before)
		}
	}
}
