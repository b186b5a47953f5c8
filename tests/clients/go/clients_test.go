// Go lock clients against the servers that tests/compiled_clients.rs
// starts: redsync v4 over go-redis v9, bsm/redislock, and go-redis's own
// connection handshake. The harness passes the servers' ports in
// RLOCKD_PORTS, the server's name in RLOCKD_SERVER and its control port in
// RLOCKD_CONTROL_PORT.
package clients

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

func ports(t *testing.T) []string {
	p := os.Getenv("RLOCKD_PORTS")
	if p == "" {
		t.Fatal("no RLOCKD_PORTS: run these through tests/compiled_clients.rs")
	}
	return strings.Split(p, ",")
}

func client(t *testing.T, index int, protocol int) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr:       "127.0.0.1:" + ports(t)[index],
		Protocol:   protocol,
		ClientName: "go-client",
		// A stopped server must fail a call quickly.
		DialTimeout: 300 * time.Millisecond,
		ReadTimeout: 300 * time.Millisecond,
		MaxRetries:  -1,
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// control asks the harness to stop server `index` and waits until it is down.
func stop(t *testing.T, index int) {
	conn, err := net.Dial("tcp", "127.0.0.1:"+os.Getenv("RLOCKD_CONTROL_PORT"))
	if err != nil {
		t.Fatalf("control: %v", err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "stop %d\n", index)
	answer, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || strings.TrimSpace(answer) != "stopped" {
		t.Fatalf("stop %d: %q %v", index, answer, err)
	}
}

func TestGoRedisHandshake(t *testing.T) {
	ctx := context.Background()
	for _, protocol := range []int{2, 3} {
		c := client(t, 0, protocol)
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatalf("RESP%d handshake (HELLO, CLIENT SETINFO): %v", protocol, err)
		}
		info, err := c.ClientInfo(ctx).Result()
		if err != nil {
			t.Fatalf("CLIENT INFO: %v", err)
		}
		if info.Resp != protocol || info.Name != "go-client" {
			t.Fatalf("connection is resp=%d name=%q, want resp=%d name=go-client", info.Resp, info.Name, protocol)
		}
	}
}

func TestRedsyncMutex(t *testing.T) {
	rs := redsync.New(goredis.NewPool(client(t, 0, 3)))
	m := rs.NewMutex("go:redsync", redsync.WithExpiry(2*time.Second), redsync.WithTries(1))
	if err := m.Lock(); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if ok, err := m.Valid(); !ok || err != nil {
		t.Fatalf("Valid after Lock: %v %v", ok, err)
	}
	other := rs.NewMutex("go:redsync", redsync.WithTries(1))
	var taken *redsync.ErrTaken
	if err := other.TryLock(); !errors.As(err, &taken) {
		t.Fatalf("a second owner: want ErrTaken, got %v", err)
	}
	time.Sleep(500 * time.Millisecond)
	if ok, err := m.Extend(); !ok || err != nil {
		t.Fatalf("Extend: %v %v", ok, err)
	}
	ttl := client(t, 0, 2).PTTL(context.Background(), "go:redsync").Val()
	if ttl < 1800*time.Millisecond || ttl > 2*time.Second {
		t.Fatalf("PTTL after Extend: %v", ttl)
	}
	if ok, err := m.Unlock(); !ok || err != nil {
		t.Fatalf("Unlock: %v %v", ok, err)
	}
	if err := other.TryLock(); err != nil {
		t.Fatalf("second owner after Unlock: %v", err)
	}
	if ok, _ := m.Unlock(); ok {
		t.Fatal("the first owner unlocked the second owner's lock")
	}
	other.Unlock()
}

func TestRedsyncExpiry(t *testing.T) {
	rs := redsync.New(goredis.NewPool(client(t, 0, 2)))
	m := rs.NewMutex("go:expiry", redsync.WithExpiry(300*time.Millisecond), redsync.WithTries(1))
	if err := m.Lock(); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	time.Sleep(500 * time.Millisecond)
	if ok, _ := m.Valid(); ok {
		t.Fatal("still valid after its expiry")
	}
	other := rs.NewMutex("go:expiry", redsync.WithTries(1))
	if err := other.Lock(); err != nil {
		t.Fatalf("lock after expiry: %v", err)
	}
	if ok, _ := m.Extend(); ok {
		t.Fatal("the expired owner extended another's lock")
	}
	other.Unlock()
}

func TestRedsyncQuorum(t *testing.T) {
	var pools []rsredis.Pool
	for i := range ports(t) {
		pools = append(pools, goredis.NewPool(client(t, i, 3)))
	}
	rs := redsync.New(pools...)
	opts := []redsync.Option{redsync.WithExpiry(5 * time.Second), redsync.WithTries(2),
		redsync.WithRetryDelay(50 * time.Millisecond)}
	all := rs.NewMutex("go:quorum:a", opts...)
	if err := all.Lock(); err != nil {
		t.Fatalf("three of three: %v", err)
	}
	all.Unlock()
	stop(t, 2)
	two := rs.NewMutex("go:quorum:b", opts...)
	if err := two.Lock(); err != nil {
		t.Fatalf("two of three is a majority: %v", err)
	}
	if ok, err := two.Valid(); !ok {
		t.Fatalf("Valid with two of three: %v", err)
	}
	two.Unlock()
	stop(t, 1)
	one := rs.NewMutex("go:quorum:c", opts...)
	if err := one.Lock(); err == nil {
		t.Fatal("one of three is no majority, but Lock succeeded")
	}
	if n := client(t, 0, 2).Exists(context.Background(), "go:quorum:c").Val(); n != 0 {
		t.Fatal("the failed attempt left its part on server 0")
	}
}

func TestRedislock(t *testing.T) {
	ctx := context.Background()
	locker := redislock.New(client(t, 0, 3))
	lock, err := locker.Obtain(ctx, "go:redislock", 2*time.Second, nil)
	if err != nil {
		t.Fatalf("Obtain (its script calls MSETNX and GETRANGE): %v", err)
	}
	if ttl, err := lock.TTL(ctx); err != nil || ttl <= time.Second {
		t.Fatalf("TTL: %v %v", ttl, err)
	}
	if _, err := locker.Obtain(ctx, "go:redislock", time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatalf("a second Obtain without retry: want ErrNotObtained, got %v", err)
	}
	if err := lock.Refresh(ctx, 5*time.Second, nil); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	if ttl, _ := lock.TTL(ctx); ttl <= 2*time.Second {
		t.Fatalf("TTL after Refresh: %v", ttl)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		lock.Release(ctx)
	}()
	started := time.Now()
	retry := &redislock.Options{RetryStrategy: redislock.LimitRetry(redislock.LinearBackoff(50*time.Millisecond), 40)}
	second, err := locker.Obtain(ctx, "go:redislock", time.Second, retry)
	if err != nil {
		t.Fatalf("Obtain with linear retries while the holder releases: %v", err)
	}
	if waited := time.Since(started); waited < 250*time.Millisecond {
		t.Fatalf("obtained after %v, before the release", waited)
	}
	if err := lock.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Fatalf("releasing a lock no longer held: want ErrLockNotHeld, got %v", err)
	}
	backoff := &redislock.Options{RetryStrategy: redislock.LimitRetry(redislock.ExponentialBackoff(10*time.Millisecond, 80*time.Millisecond), 3)}
	if _, err := locker.Obtain(ctx, "go:redislock", time.Second, backoff); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatalf("Obtain with limited exponential retries on a held lock: want ErrNotObtained, got %v", err)
	}
	if err := second.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if ttl, err := second.TTL(ctx); err != nil || ttl != 0 {
		t.Fatalf("TTL after Release: %v %v", ttl, err)
	}
}

// tlsConfig trusts the CA of `caFile` in RLOCKD_TLS_DIR (the throw-away
// PKI tests/compiled_clients.rs made) and, when asked, presents the client
// certificate that CA issued.
func tlsConfig(t *testing.T, caFile string, withCert bool) *tls.Config {
	dir := os.Getenv("RLOCKD_TLS_DIR")
	if dir == "" {
		t.Fatal("no RLOCKD_TLS_DIR: run this through tests/compiled_clients.rs")
	}
	pem, err := os.ReadFile(filepath.Join(dir, caFile))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		t.Fatalf("no certificate in %s", caFile)
	}
	config := &tls.Config{RootCAs: roots, ServerName: "localhost"}
	if withCert {
		cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key"))
		if err != nil {
			t.Fatal(err)
		}
		config.Certificates = []tls.Certificate{cert}
	}
	return config
}

func tlsClient(t *testing.T, config *tls.Config) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr:        "127.0.0.1:" + ports(t)[0],
		TLSConfig:   config,
		DialTimeout: 2 * time.Second,
		MaxRetries:  -1,
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestGoRedisTLS: go-redis over TLS (the server runs tls-auth-clients
// optional) with a client certificate and without one, redislock's lock
// over it, and a server whose CA the client does not trust refused.
func TestGoRedisTLS(t *testing.T) {
	ctx := context.Background()
	for _, withCert := range []bool{true, false} {
		c := tlsClient(t, tlsConfig(t, "ca.pem", withCert))
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatalf("PING (client certificate: %v): %v", withCert, err)
		}
		locker := redislock.New(c)
		lock, err := locker.Obtain(ctx, "go:tls", 2*time.Second, nil)
		if err != nil {
			t.Fatalf("Obtain (client certificate: %v): %v", withCert, err)
		}
		if _, err := locker.Obtain(ctx, "go:tls", time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("a second Obtain: want ErrNotObtained, got %v", err)
		}
		if err := lock.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
	err := tlsClient(t, tlsConfig(t, "rogue-ca.pem", true)).Ping(ctx).Err()
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("a server whose CA the client does not trust: want UnknownAuthorityError, got %v", err)
	}
}
